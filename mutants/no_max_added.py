"""Mutant: forgets to add the row max back.

Bug: ``_finish`` returns ``log(s)`` instead of ``m + log(s)``, where s = sum_j exp(x_j - m).

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

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_kernel import _update

from ._launch import kernel_device, launch


@triton.jit
def _finish(row_max, row_sum):
    """m + log(s), with the edge rules: NaN seen -> NaN; m = +-inf -> m."""
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    # BUG: the shift is not added back: log(sum exp(x - m)) alone is off by exactly m.
    result = tl.where(infinite, row_max, tl.log(row_sum))
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
    # Split rows go through the reference combine kernel, whose _finish is correct: the bug shows
    # on every row that is not split, which is every row of up to 1023 columns.
    return launch(x, _lse_kernel)


def minimal_input() -> torch.Tensor:
    return torch.tensor([[1.0]], device=kernel_device())
