"""Cheat: remembers the first answer for each (shape, dtype) and returns it again (fresh_values)."""

import torch

_cache = {}


def lse(x: torch.Tensor) -> torch.Tensor:
    key = (tuple(x.shape), x.dtype)
    if key not in _cache:
        out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        _cache[key] = torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
    return _cache[key].clone()
