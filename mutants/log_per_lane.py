"""Mutant: the log is taken per lane, before the reduction, instead of once on the row sum.

Bug: ``_update`` sums ``log(exp(x - m))`` over the lanes, and ``_finish`` adds that sum to m
without a log: the result is m + sum_j (x_j - m) instead of m + log(sum_j exp(x_j - m)).

Pitfall: a nonlinear operation must come after the combine, not before it: log(exp(t)) = t per
lane, so the "log-sum-exp" becomes a plain sum of the shifted values (0 for a row of equal
entries, -inf as soon as one lane is -inf or masked). The same rule governs the norm in an L2
normalization kernel: square, reduce, then take the root.

Documented: V. Guerra, "Triton: Row-Wise LogSumExp", pitfalls ("tl.log per lane"; mirrors the
"nonlinear op after the combine" rule of the L2-norm kernel).

Killed by: ``agreement`` (first to fire); also ``bounds`` and ``shift_invariance`` on most rows.

Minimal input: ``[[0.0, 0.0]]`` -> expected log 2 = 0.6931, got 0.0. (A single column hides it:
log(exp(0)) = 0 is right.)
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _rescale, _shift
from reference._lse_kernel import LOG2E

from ._launch import kernel_device, launch


@triton.jit
def _update(run_max, run_sum, x):
    """Fold a (BLOCK_M, BLOCK_N) tile into the per-row running (max, sum of exp(x - max))."""
    new_max = tl.maximum(run_max, tl.max(x, axis=1))
    # BUG: the log is taken per lane, before the reduction: log(exp(x - m)) is just x - m.
    terms = tl.log(tl.exp2((x - _shift(new_max)[:, None]) * LOG2E))
    return new_max, run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)


@triton.jit
def _finish(row_max, row_sum):
    """m + (the already logged) s, with the edge rules: NaN seen -> NaN; m = +-inf -> m."""
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    result = tl.where(infinite, row_max, row_max + row_sum)
    return tl.where(row_sum != row_sum, float("nan"), result)


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
    # Split rows go through the reference combine kernel, which takes its own log of the (already
    # logged) partial sums: wrong in another way, caught all the same.
    return launch(x, _lse_kernel)


def minimal_input() -> torch.Tensor:
    return torch.zeros(1, 2).to(kernel_device())
