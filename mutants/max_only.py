"""Mutant: returns the row max alone, dropping log(sum exp(x - max)).

Patch: in ``_finish`` (reference/_lse_combine.py) ``m + log(s)`` becomes ``m``.

Pitfall: max(x) is the "hard" maximum that log-sum-exp smooths, and the two agree when one entry
dominates (rows of very different values, the common case in trained logits): a kernel that
returns the max passes loose checks on peaked inputs and is off by up to log N on flat ones. The
result also stays inside [max, max + log N], so the bounds check cannot see it.

Documented: Blanchard, Higham and Higham (2021), "Accurately computing the log-sum-exp and
softmax functions", IMA J. Numer. Anal. 41(4), section 1 (max(x) <= lse(x) <= max(x) + log N).

Killed by: ``agreement`` (any row of two or more entries near the max).

Minimal input: ``[[0.0, 0.0]]`` -> expected log 2 = 0.6931, got 0.0.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_combine.py"
ANCHOR = "row_max + tl.log(row_sum)"
REPLACEMENT = "row_max"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[0.0, 0.0]], device=device)
