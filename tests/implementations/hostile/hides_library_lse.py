"""Hostile: calls torch.logsumexp through a name built at run time, which a source scan cannot
resolve (it sees only a dynamic attribute). The operator record of its worker sees
``aten.logsumexp`` run all the same."""

import torch

_name = "log" + "sum" + "exp"


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return getattr(torch, _name)(x.to(out_dtype), dim=1)
