"""N-D implementations with one bug each, for the call convention's tests (tests/fuzz/test_calls_run.py).

Each is called as ``lse(x, dim, keepdim=False)`` on 3-D inputs reducing dim 1 (``--ndim 3 --dim 1
--call-args x,dim,keepdim``) unless its docstring says otherwise.
"""

from __future__ import annotations

import torch


def reduces_wrong_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """Reduces the last dim whatever ``dim`` says (a kernel written for dim=-1 reused for dim=1)."""
    return torch.logsumexp(x.double(), dim=-1, keepdim=keepdim).float()


def ignores_batch_stride(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """Reads the input as if it were contiguous: right on contiguous inputs only (a hard-coded
    ``b * N * C`` offset instead of ``b * stride_b``)."""
    flat = torch.as_strided(x, x.shape, torch.empty(x.shape).stride(), x.storage_offset())
    return torch.logsumexp(flat.double(), dim=dim, keepdim=keepdim).float()


def ignores_keepdim(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """Drops the reduced dim even when asked to keep it."""
    return torch.logsumexp(x.double(), dim=dim).float()


def lse_first(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (lse, max) where its documentation (and ``--result 1``) says (max, lse)."""
    wide = x.double()
    return torch.logsumexp(wide, dim=dim).float(), wide.sum(dim=dim).float()
