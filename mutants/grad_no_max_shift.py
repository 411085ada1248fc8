"""Backward mutant: the softmax as exp(x) / exp(lse), each exponential taken unshifted.

Patch: in ``_lse_backward_kernel`` (reference/_lse_backward_kernel.py) exp(x - out) becomes
exp(x) / exp(out).

Pitfall: softmax(x) = exp(x) / sum exp(x) is the textbook formula; computed as written it
overflows once x passes 88 in float32 (inf / inf = NaN) and underflows below -87 (0 / 0 = NaN),
where exp(x - lse) is never above 1. The forward may be right while the backward, written
separately and tested on small values, is not.

Documented: Blanchard, Higham and Higham (2021), "Accurately computing the log-sum-exp and
softmax functions", IMA J. Numer. Anal. 41(4), section 2 (the shifted softmax).

Killed by: ``grad_agreement`` with ``--backward`` (any row with an entry past 88 or a max below -87).

Minimal input: ``[[100.0]]`` -> expected dx = g, got NaN.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "grad_agreement"
FUNCTION = "lse_autograd"  # the reference with its Triton backward
BACKWARD = True

PATH = "reference/_lse_backward_kernel.py"
ANCHOR = "softmax = tl.exp2((x - out[:, None]) * LOG2E)"
REPLACEMENT = "softmax = tl.exp2(x * LOG2E) / tl.exp2(out[:, None] * LOG2E)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[100.0]], device=device)
