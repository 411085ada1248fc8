"""Mutant: all -inf rows give NaN: -inf - (-inf) with the shift and rescale guards removed.

Bug: ``_update`` subtracts the running max unguarded and rescales with exp(old_max - new_max)
unguarded (the reference's ``_shift`` and ``_rescale`` exist to avoid exactly this).

Pitfall: a fully masked row (all -inf: padding, a causal mask, an empty attention window) has max
-inf, and x - max = -inf - (-inf) = NaN, so the row comes out NaN instead of -inf; the same
happens while a row's leading tiles are all -inf, and for +inf rows (inf - inf). torch.logsumexp
returns -inf for such rows (an empty sum is 0, log 0 = -inf).

Documented: rmcgibbo/logsumexp#2 ("logsumexp([-np.inf, -np.inf]) is nan");
tensorflow/tensorflow#11692 (reduce_logsumexp of -inf); pytorch/pytorch#41508 (NaN from fully
masked attention rows) and pytorch/pytorch#131060 (_safe_softmax).

Killed by: ``agreement`` (rows of recipes all_neg_inf, leading_neg_inf, pos_inf). ``bounds``,
``shift_invariance``, ``permutation_invariance`` and ``fresh_values`` catch it too, through rows
whose first tile is all -inf and whose later tiles are finite: the NaN from the first tile poisons
the running sum, and a finite answer comes out NaN.

Minimal input: ``[[-inf]]`` -> expected -inf, got NaN.
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _finish
from reference._lse_kernel import LOG2E

from ._launch import kernel_device, launch


@triton.jit
def _update(run_max, run_sum, x):
    """Fold a (BLOCK_M, BLOCK_N) tile into the per-row running (max, sum of exp(x - max))."""
    new_max = tl.maximum(run_max, tl.max(x, axis=1))
    # BUG: unguarded shift and rescale: -inf - (-inf) = NaN for an all -inf tile (inf - inf too).
    terms = tl.exp2((x - new_max[:, None]) * LOG2E)
    return new_max, run_sum * tl.exp(run_max - new_max) + tl.sum(terms, axis=1)


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
    return torch.tensor([[-float("inf")]]).to(kernel_device())
