"""Buggy: allocates its output with torch.empty and never writes the last row, which then holds
whatever that memory held before (agreement; the worker poisons freed outputs, so a stale right
answer from the previous call cannot hide it)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.empty(x.shape[0], dtype=out_dtype, device=x.device)
    if x.shape[0] > 1:
        out[:-1] = torch.logsumexp(x[:-1].to(torch.float64), dim=1).to(out_dtype)
    return out
