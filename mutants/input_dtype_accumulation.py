"""Mutant: the running sum is kept in the input dtype (float16 or bfloat16) instead of float32.

Bug: ``run_sum`` is declared with ``x_ptr.dtype.element_ty``. exp and log need float32 in Triton,
so the update computes in float32 and rounds back to the sum's declared dtype (a loop-carried
variable keeps its type), once per tile; float32 and float64 inputs are unaffected.

Pitfall: declaring the accumulator "like the input" is the natural way to write a dtype-generic
kernel, and with 16-bit inputs it rounds the sum to 11 (float16) or 8 (bfloat16) significant bits
at every tile: an error of ~2**-11 or ~2**-8 in the result, thousands of times the float32
tolerance, and a float16 sum overflows at 65504 (a row of 65536 zeros sums to +inf). Mixed
precision practice is to read 16-bit data and accumulate in float32.

Documented: Micikevicius et al. (2018), "Mixed Precision Training", ICLR (accumulate float16
products and sums into float32); Blanchard, Higham and Higham (2021), section 3 (the sum's rounding
error enters the result directly).

Killed by: ``agreement`` on float16 and bfloat16 inputs with two or more columns;
``shift_invariance``, ``permutation_invariance`` and ``fresh_values`` catch it too (the rounding
error of the sum differs between the two inputs of a pair by more than the float32 tolerance).

Minimal input: ``[[0.0, -0.5]]`` in float16 -> expected log(1 + e^-0.5) = 0.474077, got
0.474024 (the sum 1.606531 rounded to the float16 1.606445).
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _finish
from reference._lse_kernel import _update

from ._launch import kernel_device, launch


@triton.jit
def _update_in_place(run_max, run_sum, x):
    """_update in float32, with the running sum rounded back to its own dtype (a loop-carried
    variable keeps the type it was declared with)."""
    new_max, new_sum = _update(run_max, run_sum.to(x.dtype), x)
    return new_max, new_sum.to(run_sum.dtype)


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
    # BUG: the running sum is declared in the input dtype (float16/bfloat16 for 16-bit input).
    run_sum = tl.zeros([BLOCK_M], x_ptr.dtype.element_ty)
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
        run_max, run_sum = _update_in_place(run_max, run_sum, x.to(dtype))
    tail = col_begin + full_tiles * BLOCK_N
    if tail < col_end:
        cols = tail + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        # Masked lanes read -inf: they lose every max comparison and add exp(-inf) = 0 to the sum.
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=(cols < col_end)[None, :], other=-float("inf"))
        run_max, run_sum = _update_in_place(run_max, run_sum, x.to(dtype))
    if PARTIALS:
        # Split row: leave (max, sum) for the combine kernel, which merges the `splits` partials.
        part = rows * splits + pid_s
        tl.store(part_max_ptr + part, run_max, mask=rows < M)
        tl.store(part_sum_ptr + part, run_sum.to(dtype), mask=rows < M)
    else:
        tl.store(out_ptr + rows, _finish(run_max, run_sum.to(dtype)), mask=rows < M)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(x, _lse_kernel)


def minimal_input() -> torch.Tensor:
    return torch.tensor([[0.0, -0.5]], dtype=torch.float16).to(kernel_device())
