"""Tensors across the process boundary: what the parent sends a worker and rebuilds from its reply.

The input travels as its storage's bytes (padding included, so writes into it are seen) or, for a
huge-offset view, as the view's elements only (each once: :func:`fuzz.isolation.wire.distinct`), with its size, strides, storage offset and dtype;
the worker rebuilds the same strided view. A result comes back as a tensor of the same dtype,
shape and device, as a view of the input when it was one, or as a stand-in naming its type.
"""

from __future__ import annotations

import torch

from .. import wire

__all__ = ["WHOLE_STORAGE_LIMIT", "ReturnedObject", "decode_output", "encode_input", "write_back"]

WHOLE_STORAGE_LIMIT = 1 << 28
"""Inputs whose storage is at most this many bytes travel whole (padding included, so writes
into the padding are seen); larger ones (huge offsets) travel as the view's elements only."""


class ReturnedObject:
    """Stands in for a non-tensor the candidate returned; subclasses carry its type's name."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name, self.text = type_name, text

    def __repr__(self) -> str:
        return self.text


def _returned_object(type_name: str, text: str) -> ReturnedObject:
    name = type_name if type_name.replace("(", "").replace(")", "").replace("=", "").replace(".", "").isidentifier() \
        else "object"
    return type(name, (ReturnedObject,), {"__module__": "candidate"})(type_name, text)


def encode_input(x: torch.Tensor) -> tuple[dict, memoryview]:
    """The description and bytes that let a worker rebuild ``x`` exactly."""
    storage = x.untyped_storage()
    nbytes = storage.nbytes()
    spec = {
        "dtype": wire.dtype_name(x.dtype),
        "size": list(x.shape),
        "stride": list(x.stride()),
        "storage_offset": x.storage_offset(),
        # The same tensor object with the same storage maps to the same object in the worker.
        "key": [id(x), storage.data_ptr(), nbytes, list(x.shape), list(x.stride()), x.storage_offset(),
                wire.dtype_name(x.dtype)],
    }
    if nbytes <= WHOLE_STORAGE_LIMIT:
        spec["mode"] = "storage"
        frame = wire.tensor_bytes(wire.storage_bytes(x))
    else:
        spec["mode"] = "view"
        spec["storage_elements"] = nbytes // x.element_size()
        frame = wire.tensor_bytes(wire.bits(wire.distinct(x)))
    return spec, frame


def write_back(x: torch.Tensor, spec: dict, frame: bytearray) -> None:
    """Copy the worker's post-call bytes of the input into ``x`` (bit for bit)."""
    raw = torch.frombuffer(frame, dtype=torch.uint8) if len(frame) else torch.empty(0, dtype=torch.uint8)
    if spec["mode"] == "storage":
        wire.storage_bytes(x).copy_(raw.to(x.device))
    else:
        target = wire.bits(wire.distinct(x))
        target.copy_(raw.view(target.dtype).reshape(target.shape).to(x.device))


def _device_here(name: str) -> torch.device:
    device = torch.device(name)
    if device.type == "cpu" or (device.type == "cuda" and torch.cuda.is_available()):
        return device
    return torch.device("meta")


def decode_output(output: dict, frames: list[bytearray], x: torch.Tensor | None) -> object:
    """Rebuild what the candidate returned: a tensor (same dtype, shape, device), a view of
    ``x`` when it returned one, or a stand-in object with its type's name."""
    kind = output.get("kind")
    if kind == "object":
        return _returned_object(output.get("type", "object"), output.get("repr", ""))
    dtype = wire.dtype_from_name(output["dtype"])
    size = tuple(output["size"])
    if kind == "alias" and x is not None:
        return torch.empty(0, dtype=dtype, device=x.device).set_(
            x.untyped_storage(), int(output["storage_offset"]), size, tuple(output["stride"]))
    device = _device_here(output.get("device", "cpu"))
    if device.type == "meta" or output.get("withheld") or not frames:
        # No values came (a result of the wrong shape, or one on a device this process lacks):
        # the checks judge its shape, dtype and device.
        return torch.empty(size, dtype=dtype, device="meta")
    return wire.tensor_from_bytes(frames[0], dtype, size, device)
