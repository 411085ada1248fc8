"""Mutant: forgets to add the row max back.

Patch: in ``_finish`` (reference/_lse_combine.py, shared by the kernel and the split-row combine)
the result ``m + log(s)`` becomes ``log(s)``, where s = sum_j exp(x_j - m).

Pitfall: the shift by the row max m is what keeps exp from overflowing; the identity is
log(sum exp(x)) = m + log(sum exp(x - m)), and the "+ m" is easy to drop when the shift and the log
sit in different functions. The result is still a plausible finite log-probability (between 0 and
log N), so nothing looks wrong until it is compared with a reference: the canonical LSE bug.

Documented: V. Guerra, "Triton: Row-Wise LogSumExp", pitfalls ("forgetting to add row_max back");
Blanchard, Higham and Higham (2021), "Accurately computing the log-sum-exp and softmax functions",
IMA J. Numer. Anal. 41(4), section 2 (the shifted formula).

Killed by: ``shift_invariance`` (lse(x + c) must move by exactly c; this one stays put). It is
the check that reports the shrunk counterexample: Hypothesis shrinks the failure to a row of
zeros, whose max is 0, so the answer is right there and only the shifted copy exposes the bug.
``agreement`` and ``bounds`` (the result leaves [m, m + log N]) catch every row whose max is
not 0.

Minimal input: ``[[1.0]]`` -> expected 1.0, got 0.0 (shifted by c: still 0.0, not 1.0 + c).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "shift_invariance"

PATH = "reference/_lse_combine.py"
ANCHOR = "row_max + tl.log(row_sum)"
REPLACEMENT = "tl.log(row_sum)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[1.0]], device=device)
