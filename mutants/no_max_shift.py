"""Mutant: no max shift at all: log(sum_j exp(x_j)).

Bug: ``_update`` sums ``exp(x)`` unshifted (no rescaling needed then) and ``_finish`` returns
``log(s)``: the textbook formula, with the shift-and-add-back identity left out.

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

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from ._launch import kernel_device, launch


@triton.jit
def _update(run_max, run_sum, x):
    """Fold a (BLOCK_M, BLOCK_N) tile into the per-row running (max, sum of exp(x))."""
    new_max = tl.maximum(run_max, tl.max(x, axis=1))
    # BUG: no shift by the running max: exp(x) overflows above ~88.7 and underflows below ~-104.
    terms = tl.exp(x)
    # The select changes nothing (the running sum is 0 while the running max is -inf), but without
    # it Triton 3.6 fails to compile the split-row variant for float32 input: its thread-locality
    # pass asserts on a loop that only accumulates a reduction ("loopResult.hasOneUse()").
    return new_max, tl.where(new_max != -float("inf"), run_sum, 0.0) + tl.sum(terms, axis=1)


@triton.jit
def _finish(row_max, row_sum):
    """log(s): with no shift there is nothing to add back."""
    return tl.log(row_sum)


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
    # Split rows go through the reference combine kernel, which treats the partial sums as shifted
    # by their partial max: wrong in another way, caught all the same.
    return launch(x, _lse_kernel)


def minimal_input() -> torch.Tensor:
    return torch.tensor([[89.0]]).to(kernel_device())
