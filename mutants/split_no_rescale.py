"""Mutant: the split-row combine adds the partial sums without rescaling them to the row max.

Patch: in ``_lse_combine_kernel`` (reference/_lse_combine.py) ``row_sum = sum_k s_k`` instead of
``sum_k s_k exp(m_k - m)``, where (m_k, s_k) are the partial (max, sum of exp(x - m_k)) of split k
and m = max_k m_k.

Pitfall: a split-K (Flash-Decoding style) reduction computes each partial relative to its own max;
merging them is the same online rescaling as within a row, done once more across programs, and
it is the step that gets dropped. It only runs when a row is split across programs (few rows, long
rows), which unit tests with many short rows never reach.

Documented: Dao, Haziza, Massa and Sizov (2023), "Flash-Decoding for long-context inference"
(the final reduction rescales each split's contribution by its log-sum-exp);
Dao-AILab/flash-attention#949 (numerical error in the split-KV combine).

Killed by: ``agreement`` on rows that the launch policy splits (in the interpreter, 769 columns
and more: four tiles or more) whose partial maxima differ.

Minimal input: one row of 8192 columns, zeros except x[0, 8191] = 10 (split in 4 partials in the
interpreter, in 2 on a GPU) -> expected 10 + log(1 + 8191 e^-10) = 10.3162, got 18.7234 in the
interpreter (the partials of zeros, 2048 each, are added at full weight to the last one's).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_combine.py"
ANCHOR = "tl.sum(part_sum * _rescale(part_max, row_max[:, None]), axis=1)"
REPLACEMENT = "tl.sum(part_sum, axis=1)"


def minimal_input(device: torch.device) -> torch.Tensor:
    x = torch.zeros(1, 8192, device=device)
    x[0, -1] = 10.0
    return x
