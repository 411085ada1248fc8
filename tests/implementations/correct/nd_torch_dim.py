"""``torch.logsumexp`` as it is called on N-D tensors: ``lse(x, dim, keepdim=False)``.

Declared (contracts.json) as ``--ndim 3 --dim 1 --call-args x,dim,keepdim``: the fuzzer passes the
dim and keepdim, as a caller of ``torch.logsumexp`` does. The input is widened to float32 first
(float64 stays float64): eager torch keeps a float16 row's sum in float16 and overflows it past
65504 columns (see ``torch_native.py``), which is torch's bug, not this wrapper's subject.
"""

from __future__ import annotations

import torch


def lse(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    wide = x if x.dtype == torch.float64 else x.float()
    return torch.logsumexp(wide, dim=dim, keepdim=keepdim)
