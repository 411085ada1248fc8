"""A function returning ``(row_sum, lse)``, as fused kernels return statistics beside an output.

Called as ``lse(x, dim=0)`` on 3-D inputs and declared ``--ndim 3 --dim 0 --call-args x,dim
--result 1`` (contracts.json): the LSE is item 1 of the returned tuple. The LSE is computed in
float64 with the max shift and rounded to float32 (float64 stays float64).
"""

from __future__ import annotations

import torch


def lse(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    wide = x.double()
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return wide.sum(dim=dim).to(out_dtype), torch.logsumexp(wide, dim=dim).to(out_dtype)
