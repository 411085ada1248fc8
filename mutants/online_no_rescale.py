"""Mutant: the online loop does not rescale the running sum when the running max grows.

Bug: ``_update`` returns ``run_sum + sum(exp(x - new_max))``: the sum carried from earlier tiles,
taken relative to the old max, is not multiplied by exp(old_max - new_max).

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

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _finish, _shift
from reference._lse_kernel import LOG2E

from ._launch import kernel_device, launch


@triton.jit
def _update(run_max, run_sum, x):
    """Fold a (BLOCK_M, BLOCK_N) tile into the per-row running (max, sum of exp(x - max))."""
    new_max = tl.maximum(run_max, tl.max(x, axis=1))
    # NaN anywhere turns run_sum into NaN here and it stays NaN: that is how NaN rows come out.
    terms = tl.exp2((x - _shift(new_max)[:, None]) * LOG2E)
    # BUG: the running sum is not rescaled by exp(run_max - new_max) when the max grows.
    return new_max, run_sum + tl.sum(terms, axis=1)


@triton.jit
def _lse_kernel(
    x_ptr, out_ptr, part_max_ptr, part_sum_ptr,
    M, N, stride_row, stride_col, cols_per_split, splits,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PARTIALS: tl.constexpr,
    INT64: tl.constexpr, ROW_ALIGN: tl.constexpr, COL_ALIGN: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    # Rows past M re-read row M - 1 instead of being masked; their results are never stored.
    safe_rows = tl.minimum(rows, M - 1)
    if INT64:
        # Offsets past 2**31 elements (huge tensors, huge strides) wrap in int32.
        safe_rows = safe_rows.to(tl.int64)
    # Identities the host guaranteed (ROW_ALIGN divides the stride, COL_ALIGN divides N): they let
    # the compiler prove the alignment of row starts and of the tail mask.
    stride_row = (stride_row // ROW_ALIGN) * ROW_ALIGN
    N = (N // COL_ALIGN) * COL_ALIGN
    row_ptrs = x_ptr + safe_rows[:, None] * stride_row
    dtype = out_ptr.dtype.element_ty  # float32, or float64 for float64 input
    run_max = tl.full([BLOCK_M], -float("inf"), dtype)
    run_sum = tl.zeros([BLOCK_M], dtype)
    if PARTIALS:
        col_begin = pid_s * cols_per_split
        col_end = tl.minimum(col_begin + cols_per_split, N)
    else:
        col_begin = 0
        col_end = N
    full_tiles = (col_end - col_begin) // BLOCK_N
    for tile in range(0, full_tiles):
        cols = col_begin + tile * BLOCK_N + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        x = tl.load(row_ptrs + cols[None, :] * stride_col)
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    tail = col_begin + full_tiles * BLOCK_N
    if tail < col_end:
        cols = tail + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        # Masked lanes read -inf: they lose every max comparison and add exp(-inf) = 0 to the sum.
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=(cols < col_end)[None, :], other=-float("inf"))
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    if PARTIALS:
        # Split row: leave (max, sum) for the combine kernel, which merges the `splits` partials.
        part = rows * splits + pid_s
        tl.store(part_max_ptr + part, run_max, mask=rows < M)
        tl.store(part_sum_ptr + part, run_sum, mask=rows < M)
    else:
        tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows < M)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(x, _lse_kernel)


def minimal_input() -> torch.Tensor:
    from reference._device import interpreting

    rows, cols = (1, 512) if interpreting() else (264, 8192)
    x = torch.zeros(rows, cols, device=kernel_device())
    x[:, -1] = 10.0
    return x
