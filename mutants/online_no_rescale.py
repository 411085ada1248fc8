"""Mutant: the online loop does not rescale the running sum when the running max grows.

Patch: in ``_update`` (reference/_lse_kernel.py) ``run_sum * _rescale(run_max, new_max)`` becomes
``run_sum``: the sum carried from earlier tiles, taken relative to the old max, is added as if it
were relative to the new one.

Pitfall: the online (one-pass) softmax normalizer keeps a running max m and a running sum d of
exp(x - m); whenever a tile raises m, d must be rescaled by exp(m_old - m_new), or the earlier
terms are counted as if they were relative to the new max. One-tile rows and rows whose maximum
sits in the first tile give the right answer, so the bug needs long rows with a late maximum
(an ascending row, or a peak in a later tile).

Documented: Milakov and Gimelshein (2018), "Online normalizer calculation for softmax",
arXiv:1805.02867, algorithm 3 (d_j = d_{j-1} * e^(m_{j-1} - m_j) + e^(x_j - m_j)); Dao et al.
(2022), "FlashAttention", algorithm 1 (the same rescaling of l).

Killed by: ``agreement`` on rows spanning two tiles or more with a later, larger maximum;
``permutation_invariance`` catches it too (reversing the row moves the maximum to the front).

Minimal input: in the interpreter (256-column tiles), one row of 512 columns, zeros except
x[0, 511] = 10 -> expected 10 + log(1 + 511 e^-10) = 10.0229, got 10 + log(257.01) = 15.5491
(the first tile's sum of 256 is never scaled down by e^-10). On a GPU: 264 rows of 8192 columns
(two 4096-column tiles per row, no split).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "run_sum * _rescale(run_max, new_max)"
REPLACEMENT = "run_sum"


def minimal_input(device: torch.device) -> torch.Tensor:
    rows, cols = (1, 512) if device.type == "cpu" else (264, 8192)
    x = torch.zeros(rows, cols, device=device)
    x[:, -1] = 10.0
    return x
