"""flash-linear-attention's logsumexp_fwd (a Triton kernel of fla.ops.utils).

    out = fla.ops.utils.logsumexp_fwd(x)     # x: (..., D) -> (...,), float32

fla splits each row into chunks of B = min(next_pow2(D), 65536) columns, one program per
(row, chunk) computing max + log(sum(exp(x - max))) in float32, then combines the chunks with
torch.logsumexp. Its docstring: "Compute the logsumexp of the input tensor over the last
dimension. x (Tensor): The input tensor of any shape."

Run with flash-linear-attention 0.6.0 / fla-core 0.6.0 (CPU through Triton's interpreter; H200).
Checked with

    lse-fuzz check examples/real_world/fla_logsumexp.py:lse --device cpu --contract finite --output-dtype float32

(--contract finite: a row holding +inf gives NaN, and fla claims nothing about infinities.)
Found: an all -inf row (or chunk) gives NaN, and strided rows are read as if contiguous
(docs/bugs-found.md). Which one a run reports first depends on the seed; add --layouts contiguous to
see the first alone.
"""

from __future__ import annotations

import math

import torch
from fla.ops.utils import logsumexp_fwd


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp: fla's logsumexp_fwd over the last dim (float32 result)."""
    if x.shape[-1] == 0:
        # fla raises on an empty last dim (x.view(-1, 0) is ambiguous; docs/bugs-found.md): answered
        # here so the fuzzer looks past it.
        return torch.full(x.shape[:-1], -math.inf, dtype=torch.float32, device=x.device)
    return logsumexp_fwd(x)
