"""FlagGems' logsumexp: torch.logsumexp with FlagGems' Triton kernels in place of ATen's.

FlagGems registers Triton implementations of ATen operators (amax, sub, exp, sum, log, ...) and
``flag_gems.use_gems()`` routes calls to them; torch.logsumexp, a composite of those operators in
ATen (amax, then sum(exp(x - max)) written into a result of x's dtype, log, add), then runs on them:

    with flag_gems.use_gems():
        out = torch.logsumexp(x, dim=-1)      # x: (M, N) -> (M,), in x's dtype

GPU only: ``import flag_gems`` looks for a device and raises "No device were detected on your
machine" without one, also under Triton's interpreter. FlagGems does not support float64 for
every operator; the declared dtypes are float32, float16, bfloat16.

Run with flag-gems 5.0.2 on the H200 (torch 2.11.0, Triton 3.6.0). Checked with

    lse-fuzz check examples/real_world/flag_gems_logsumexp.py:lse --device cuda \
        --dtypes float32,float16,bfloat16
"""

from __future__ import annotations

import flag_gems
import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp: torch.logsumexp over the last dim, on FlagGems' kernels."""
    with flag_gems.use_gems():
        return torch.logsumexp(x, dim=-1)
