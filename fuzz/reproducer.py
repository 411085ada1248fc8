"""Reproducer files: one failing example, saved so that one command replays it.

A reproducer is a ``torch.save`` of plain data (tensors, strings, numbers, lists, dicts), so it
loads with ``torch.load(weights_only=True)``: the input's values (contiguous, on the CPU), its
layout, the row recipes, the plan of the metamorphic check, the checks that ran and the failure
text. :meth:`Reproducer.example` rebuilds the exact input, strides and storage offset included.
"""

from __future__ import annotations

import hashlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import torch

from reference.errors import InvalidArgument

from .batching import BatchLayout
from .calls import CallConvention
from .checks import Plan, validate_checks
from .layouts import Layout
from .outcomes import Outcome
from .strategies import Contract, LseInput, RowSpec

FORMAT = "lse-fuzz-reproducer/1"


@dataclass(frozen=True)
class Reproducer:
    values: torch.Tensor
    layout: Layout
    specs: tuple[RowSpec, ...]
    seed: int
    plan: Plan
    checks: tuple[str, ...]
    contract: Contract
    check: str | None  # the check that failed (None for an error raised by the implementation)
    message: str
    meta: dict[str, str]
    lost: str | None = None  # the Outcome when the isolated worker was lost on this example (crash, hang)
    batch: BatchLayout | None = None  # the N-D layout under an N-D call convention

    def example(self, device: torch.device | str | None = None) -> LseInput:
        device = torch.device("cpu") if device is None else torch.device(device)
        example = LseInput(values=self.values, layout=self.layout, specs=self.specs, seed=self.seed, device=device,
                           batch=self.batch)
        example.x = example.rebuild(self.values, device)
        return example


def replay_command(path: Path | str, target: str, *, isolate: bool = False, call: CallConvention | None = None,
                   device: str | None = None) -> str:
    """The one replay command; ``isolate`` for an input that crashed or hung its worker; ``call``
    adds the call convention's options (the file holds it too: the line says how it was called);
    ``device`` where to replay it (an example the CPU cannot run: cuda; None: where it was found)."""
    options = "" if call is None or call.is_default else " " + call.cli_args()
    options += f" --device {device}" if device else ""
    return f"lse-fuzz replay {path} --impl {target}{options}" + (" --isolate" if isolate else "")


def save_reproducer(
    directory: Path | str,
    example: LseInput,
    plan: Plan,
    *,
    checks: tuple[str, ...],
    contract: Contract,
    check: str | None,
    message: str,
    lost: str | None = None,
    name: str | None = None,
) -> Path:
    """Write the example to ``directory`` (created if needed); the name depends only on its content
    unless ``name`` is given."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    values = example.values.detach().cpu().contiguous()
    payload = {
        "format": FORMAT,
        "values": values,
        "layout": example.layout.to_dict(),
        "specs": [[spec.recipe, spec.level] for spec in example.specs],
        "seed": example.seed,
        "plan": plan.to_dict(),
        "checks": list(checks),
        "contract": contract.to_dict(),
        "check": check,
        "message": message,
        "lost": lost,
        **({} if example.batch is None else {"batch": example.batch.to_dict()}),
        "meta": {
            "torch": str(torch.__version__),
            "python": platform.python_version(),
            "device": str(example.device),
        },
    }
    digest = hashlib.sha1()
    digest.update(values.view(torch.uint8).numpy().tobytes() if values.numel() else b"")
    digest.update(repr((str(values.dtype), tuple(values.shape), payload["layout"], payload["plan"],
                        payload["checks"], check) + ((payload["batch"],) if "batch" in payload else ())).encode())
    path = directory / (name or f"lse-fuzz-{check or lost or 'error'}-{digest.hexdigest()[:10]}.pt")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)  # never half a file, also when the process dies right after
    return path


def read_payload(path: Path | str, expected: str) -> dict:
    """The dict a reproducer file of format ``expected`` holds; InvalidArgument (one line) for a
    missing file, one torch cannot read (safely: tensors and plain data only) or another format."""
    path = Path(path)
    if not path.is_file():
        raise InvalidArgument(f"path={str(path)!r}: no such reproducer file.")
    try:
        data = torch.load(path, weights_only=True)
    except Exception as exc:
        raise InvalidArgument(f"path={str(path)!r} is not a reproducer ({type(exc).__name__}: {exc}).") from None
    if not isinstance(data, dict) or data.get("format") != expected:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise InvalidArgument(f"path={str(path)!r} has format {found!r}; expected {expected!r}.")
    return data


def load_reproducer(path: Path | str) -> Reproducer:
    data = read_payload(path, FORMAT)
    plan = data["plan"]
    return Reproducer(
        values=data["values"],
        layout=Layout.from_dict(data["layout"]),
        specs=tuple(RowSpec(name, level) for name, level in data["specs"]),
        seed=int(data["seed"]),
        plan=Plan.from_dict(plan),
        checks=validate_checks(data["checks"]),
        contract=Contract.parse(data["contract"]),
        check=data["check"],
        message=data["message"],
        meta=dict(data["meta"]),
        lost=None if data.get("lost") is None else Outcome(data["lost"]).value,  # old files: "timed_out"
        batch=None if data.get("batch") is None else BatchLayout.from_dict(data["batch"]),
    )
