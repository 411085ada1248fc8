"""A function that keeps the reduced dim and returns an object holding the LSE as ``.lse``.

Called as ``lse(x)`` on 4-D (B, H, N, D) inputs, it reduces dim -2 (the sequence dim of attention
statistics) and keeps it with size 1: its result's ``lse`` has shape (B, H, 1, D). Declared
``--ndim 4 --dim -2 --keepdim --result lse`` (contracts.json): dim and keepdim are fixed, not
passed. Computed with the max shift in float32 (float64 for float64), as float32 output.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Stats:
    max: torch.Tensor
    lse: torch.Tensor


def lse(x: torch.Tensor) -> Stats:
    wide = x if x.dtype == torch.float64 else x.float()
    return Stats(max=wide.amax(dim=-2, keepdim=True) if x.shape[-2] else wide.sum(dim=-2, keepdim=True),
                 lse=torch.logsumexp(wide, dim=-2, keepdim=True))
