"""Hostile: returns the same tensor object on every call of a shape, overwritten with each call's
answers. In process the caller's earlier result changes under it (metamorphic checks compare a
second call with the first); a worker that shipped each output and dropped it hid that."""

import torch

_buffers: dict = {}


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    key = (x.shape[0], out_dtype)
    if key not in _buffers:
        _buffers[key] = torch.empty(x.shape[0], dtype=out_dtype)
    _buffers[key].copy_(torch.logsumexp(x.to(torch.float64), dim=1))
    return _buffers[key]
