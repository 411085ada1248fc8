"""Mutant: no max shift at all: log(sum_j exp(x_j)).

Patch: in ``_update`` (reference/_lse_kernel.py) the running max is replaced by 0
(``new_max = tl.zeros_like(run_max)``). Subtracting it, rescaling by exp(0 - 0) and adding it back
in ``_finish`` are then all no-ops, and what is left is the textbook formula log(sum exp(x)).

Pitfall: exp overflows float32 for arguments above ~88.72 (float64: ~709.78) and underflows to 0
below ~-103.97 (float32, subnormals included), so log(sum exp(x)) is +inf for large logits and
-inf for very negative ones, although the true result is close to max(x) in both cases. The
shifted form m + log(sum exp(x - m)) keeps every exponent <= 0 with one term equal to 1.

Documented: Blanchard, Higham and Higham (2021), "Accurately computing the log-sum-exp and softmax
functions", IMA J. Numer. Anal. 41(4), section 2; V. Guerra, "Triton: Row-Wise LogSumExp"
("direct log(sum exp(x)) overflows fp32 above ~88").

Killed by: ``agreement`` (rows of recipes near_exp_overflow, near_limit, far_below_zero, scaled);
``bounds`` and ``shift_invariance`` catch the same rows.

Minimal input: ``[[89.0]]`` -> expected 89.0, got +inf (exp(89) overflows float32).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "new_max = tl.maximum(run_max, tl.max(tl.maximum(tl.maximum(x0, x1), tl.maximum(x2, x3)), axis=1))"
REPLACEMENT = "new_max = tl.zeros_like(run_max)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[89.0]], device=device)
