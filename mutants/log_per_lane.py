"""Mutant: the log is taken per lane, before the reduction.

Patch: in ``_exp`` (reference/_lse_kernel.py) each lane's term exp(x - m) is wrapped in
``tl.log`` before the lanes are summed. The log of the row sum in ``_finish`` stays where it is
(it lives in another file, and a patch is one edit), so the row comes out
m + log(sum_j (x_j - m)): -inf for a row of equal entries (the sum is 0), NaN once any entry lies
below the max (the log of a negative sum).

Pitfall: a nonlinear operation must come after the combine, not before it: log(exp(t)) = t per
lane, so the reduction then adds up plain shifted values instead of their exponentials. The same
rule governs the norm in an L2 normalization kernel: square, reduce, then take the root.

Documented: V. Guerra, "Triton: Row-Wise LogSumExp", pitfalls ("tl.log per lane"; mirrors the
"nonlinear op after the combine" rule of the L2-norm kernel).

Killed by: ``agreement`` (first to fire); also ``bounds`` and ``shift_invariance`` on most rows.

Minimal input: ``[[0.0]]`` -> expected 0.0, got -inf (the lane's log(exp(0)) = 0 is summed, and
log 0 = -inf).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "tl.exp2((x - shift[:, None]) * LOG2E)"
REPLACEMENT = "tl.log(tl.exp2((x - shift[:, None]) * LOG2E))"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.zeros(1, 1, device=device)
