"""torch.logsumexp, eager, as every PyTorch user calls it.

    out = torch.logsumexp(x, dim=-1)        # x: (M, N) -> (M,), in x's dtype

Run with torch 2.13.0 (CPU) and torch 2.11.0 (H200). Checked with

    lse-fuzz check examples/real_world/torch_logsumexp.py:lse --device cpu --max-elements 300000

The result has x's dtype, so float16 and bfloat16 inputs get a float16 or bfloat16 answer.
Found: a float16 row of N >= 65520 equal values gives inf (docs/bugs-found.md).
"""

from __future__ import annotations

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp: torch.logsumexp over the last dim."""
    return torch.logsumexp(x, dim=-1)
