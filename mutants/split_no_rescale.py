"""Mutant: the split-row combine adds the partial sums without rescaling them to the row max.

Bug: in ``_lse_combine_kernel``, ``row_sum = sum_k s_k`` instead of ``sum_k s_k exp(m_k - m)``,
where (m_k, s_k) are the partial (max, sum of exp(x - m_k)) of split k and m = max_k m_k.

Pitfall: a split-K (Flash-Decoding style) reduction computes each partial relative to its own max;
merging them is the same online rescaling as within a row, done once more across programs, and
it is the step that gets dropped. It only runs when a row is split across programs (few rows, long
rows), which unit tests with many short rows never reach.

Documented: Dao, Haziza, Massa and Sizov (2023), "Flash-Decoding for long-context inference"
(the final reduction rescales each split's contribution by its log-sum-exp);
Dao-AILab/flash-attention#949 (numerical error in the split-KV combine).

Killed by: ``agreement`` on rows that the launcher splits (in the interpreter, 769 columns and
more: four tiles or more) whose partial maxima differ.

Minimal input: one row of 8192 columns, zeros except x[0, 8191] = 10 (split in 4 partials in the
interpreter, in 2 on a GPU) -> expected 10 + log(1 + 8191 e^-10) = 10.3162, got 18.7234 in the
interpreter (the partials of zeros, 2048 each, are added at full weight to the last one's).
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _finish
from reference._lse_kernel import _lse_kernel

from ._launch import kernel_device, launch


@triton.jit
def _lse_combine_kernel(part_max_ptr, part_sum_ptr, out_ptr, M,
                        SPLITS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    splits = tl.arange(0, BLOCK_S)
    mask = (rows < M)[:, None] & (splits < SPLITS)[None, :]
    offsets = rows[:, None] * SPLITS + splits[None, :]
    # Padding partials are (-inf, 0): the identity of the merge.
    part_max = tl.load(part_max_ptr + offsets, mask=mask, other=-float("inf"))
    part_sum = tl.load(part_sum_ptr + offsets, mask=mask, other=0.0)
    row_max = tl.max(part_max, axis=1)
    # BUG: the partial sums are added as they are, not rescaled by exp(part_max - row_max).
    row_sum = tl.sum(part_sum, axis=1)
    tl.store(out_ptr + rows, _finish(row_max, row_sum), mask=rows < M)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(x, _lse_kernel, _lse_combine_kernel)


def minimal_input() -> torch.Tensor:
    x = torch.zeros(1, 8192, device=kernel_device())
    x[0, -1] = 10.0
    return x
