"""The wire format between the parent and its worker processes, and raw-bytes views of tensors.

A ``multiprocessing.connection.Connection`` over a socket pair carries messages; each is one JSON
header frame, then the raw byte frames it announces in ``header["frames"]`` (their lengths). No
pickle in either direction: the parent never unpickles what a candidate's process sends.

Both sides import this module; it needs only the standard library and torch (the fork server
imports it before any worker exists, so it must not import the project's kernels).
"""

from __future__ import annotations

import json
from multiprocessing.connection import Connection

import torch

from lse_fuzz._errors import LseFuzzError

MAX_HEADER_BYTES = 1 << 20
REBUILDING_INPUT = "rebuilding the input in the worker"
"""The ``during`` of a "raised" reply when the input never reached the candidate."""


def send_message(conn: Connection, header: dict, frames: tuple = ()) -> None:
    """One JSON header, then each frame (bytes-like) as its own message."""
    header = dict(header, frames=[memoryview(f).nbytes for f in frames])
    conn.send_bytes(json.dumps(header).encode())
    for frame in frames:
        conn.send_bytes(frame)


class FrameTooLarge(LseFuzzError, ValueError):
    """A frame announced larger than the receiver accepts (it is not read)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes announced, at most {limit} accepted")
        self.size, self.limit = size, limit


def recv_message(conn: Connection, *, max_frame: int | None = None) -> tuple[dict, list[bytearray]]:
    """The next message: its header and its frames (writable, so torch.frombuffer can wrap them).
    A frame over ``max_frame`` bytes raises :class:`FrameTooLarge` before anything is allocated."""
    header = json.loads(conn.recv_bytes(MAX_HEADER_BYTES))
    if not isinstance(header, dict):
        raise ValueError(f"message header is a {type(header).__name__}, not an object")
    frames = []
    for size in header.get("frames", []):
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"frame of {size!r} bytes announced")
        if max_frame is not None and size > max_frame:
            raise FrameTooLarge(size, max_frame)
        buffer = bytearray(size)
        if size:
            received = conn.recv_bytes_into(buffer)
            if received != size:
                raise ValueError(f"frame of {received} bytes, {size} announced")
        else:
            conn.recv_bytes()
        frames.append(buffer)
    return header, frames


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def dtype_from_name(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """The raw bytes of a tensor's elements in row-major order (copied to the CPU if needed)."""
    flat = t.detach().reshape(-1)
    if flat.device.type != "cpu":
        flat = flat.cpu()
    return memoryview(flat.contiguous().view(torch.uint8).numpy())


def tensor_from_bytes(frame: bytearray, dtype: torch.dtype, size, device="cpu") -> torch.Tensor:
    raw = torch.frombuffer(frame, dtype=torch.uint8) if len(frame) else torch.empty(0, dtype=torch.uint8)
    return raw.view(dtype).reshape(size).to(device)


def bits(t: torch.Tensor) -> torch.Tensor:
    """A tensor's raw bits as same-width integers (a view: strides are kept)."""
    return t.detach().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def distinct(t: torch.Tensor) -> torch.Tensor:
    """``t`` (a view) with each dim of stride 0 cut to its first index: every element it addresses,
    once. A call's input under a convention carries its row count as such a dim
    (fuzz.calls.CallConvention.carrier): expanded, its elements would be that many copies of the
    input (25 GB for one 4-D float64 input sent to a worker on a GPU)."""
    for d, (size, stride) in enumerate(zip(t.shape, t.stride())):
        if stride == 0 and size > 1:
            t = t.narrow(d, 0, 1)
    return t


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under ``t`` as a flat uint8 tensor (a view of the same memory)."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
