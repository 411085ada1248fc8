"""An op's failing input saved to a file and read back exactly: every tensor's values, shape,
strides and storage offset (a transposed LSE tensor stays transposed), the op, the LSE base, the
checks that ran and what failed. ``lse-fuzz replay FILE --impl TARGET`` reads it, as it reads the
row LSE's reproducers (the format names the op)."""

from __future__ import annotations

import hashlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import torch

from reference._launch import largest_view_offset
from reference.errors import InvalidArgument

from ..reproducer import read_payload
from .ops import Op, lse_base, op

__all__ = ["FORMAT", "OpReproducer", "is_op_reproducer", "load_op_reproducer", "op_replay_command",
           "save_op_reproducer"]

FORMAT = "lse-fuzz-op-reproducer/1"


def _pack(t: torch.Tensor) -> dict:
    """The span of storage the view reads (from its offset on), its shape and its strides."""
    span = 1 + largest_view_offset(t) if t.numel() else 0
    flat = t.detach().as_strided((span,), (1,)).cpu().clone()
    return {"flat": flat, "shape": list(t.shape), "stride": list(t.stride())}


def _unpack(data: dict, device: torch.device | str) -> torch.Tensor:
    return data["flat"].to(device).as_strided(tuple(data["shape"]), tuple(data["stride"]))


@dataclass(frozen=True)
class OpReproducer:
    op: Op
    tensors: dict[str, dict]
    kinds: tuple[str, ...]
    layout: str
    base: str | int
    checks: tuple[str, ...]
    check: str | None
    message: str
    seed: int
    meta: dict

    def example(self, device: torch.device | str):
        """The saved input, rebuilt on ``device`` with its strides."""
        tensors = {name: _unpack(data, device) for name, data in self.tensors.items()}
        return self.op.parts.input_type(**tensors, kinds=self.kinds, layout=self.layout, base=self.base)


def save_op_reproducer(directory: Path | str, what: Op, example, *, checks: tuple[str, ...], check: str | None,
                       message: str, seed: int, kind: str | None = None) -> Path:
    """Write ``example`` to ``directory`` (created if needed); the name depends only on the content
    (``kind`` names the file where no check failed: ``error``, ``crash``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {name: _pack(t) for name, t in example.named().items()}
    payload = {"format": FORMAT, "op": what.name, "tensors": tensors, "kinds": list(example.kinds),
               "layout": example.layout, "base": example.base, "checks": list(checks), "check": check,
               "message": message, "seed": seed,
               "meta": {"torch": str(torch.__version__), "python": platform.python_version(),
                        "device": str(next(iter(example.named().values())).device)}}
    digest = hashlib.sha1(repr((what.name, payload["kinds"], payload["layout"], payload["base"], checks, check)).encode())
    for data in tensors.values():
        flat = data["flat"]
        digest.update(repr((str(flat.dtype), data["shape"], data["stride"])).encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    path = directory / f"lse-fuzz-{what.name}-{check or kind or 'error'}-{digest.hexdigest()[:10]}.pt"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)  # never half a file
    return path


def is_op_reproducer(path: Path | str) -> bool:
    """Whether ``path`` holds an op's reproducer (else a row LSE's, or no reproducer at all)."""
    try:
        data = torch.load(path, weights_only=True)
    except Exception:
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def load_op_reproducer(path: Path | str) -> OpReproducer:
    data = read_payload(path, FORMAT)
    what = op(data["op"])
    checks = tuple(data["checks"])
    unknown = [name for name in checks if name not in what.checks]
    if unknown:
        raise InvalidArgument(f"path={str(path)!r} names checks {unknown} that --op {what.name} does not have.")
    return OpReproducer(op=what, tensors=dict(data["tensors"]), kinds=tuple(data["kinds"]), layout=data["layout"],
                        base=lse_base(data["base"]), checks=checks, check=data["check"], message=data["message"],
                        seed=int(data["seed"]), meta=dict(data["meta"]))


def op_replay_command(path: Path | str, target: str) -> str:
    """The one replay command of an op's reproducer (the file holds the op and the base)."""
    return f"lse-fuzz replay {path} --impl {target}"
