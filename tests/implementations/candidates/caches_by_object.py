"""Cheat: memoizes on the tensor object, so new values written into the same tensor get the old
answer (fresh_values)."""

import weakref

import torch

_cache = {}


def lse(x: torch.Tensor) -> torch.Tensor:
    entry = _cache.get(id(x))
    if entry is None or entry[0]() is not x:
        out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        entry = (weakref.ref(x), torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype))
        _cache[id(x)] = entry
    return entry[1].clone()
