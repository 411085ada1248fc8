"""Planted equivalent "mutant": the correct kernel with the tiles of each range folded backwards.

The tail tile first, then the full tiles from the last to the first. Online rescaling makes the
fold order irrelevant (up to rounding, which the tolerance covers), so no check can kill it: the
harness must report it Survived, not Killed.
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from mutants._launch import launch
from reference._lse_combine import _finish
from reference._lse_kernel import _update


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
    safe_rows = tl.minimum(rows, M - 1)
    if INT64:
        safe_rows = safe_rows.to(tl.int64)
    row_ptrs = x_ptr + safe_rows[:, None] * stride_row
    dtype = out_ptr.dtype.element_ty
    run_max = tl.full([BLOCK_M], -float("inf"), dtype)
    run_sum = tl.zeros([BLOCK_M], dtype)
    if PARTIALS:
        col_begin = pid_s * cols_per_split
        col_end = tl.minimum(col_begin + cols_per_split, N)
    else:
        col_begin = 0
        col_end = N
    full_tiles = (col_end - col_begin) // BLOCK_N
    tail = col_begin + full_tiles * BLOCK_N
    if tail < col_end:
        cols = tail + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=(cols < col_end)[None, :], other=-float("inf"))
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    # EQUIVALENT: the full tiles folded from the last to the first.
    for step in range(0, full_tiles):
        cols = col_begin + (full_tiles - 1 - step) * BLOCK_N + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        x = tl.load(row_ptrs + cols[None, :] * stride_col)
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    if PARTIALS:
        part = rows * splits + pid_s
        tl.store(part_max_ptr + part, run_max, mask=rows < M)
        tl.store(part_sum_ptr + part, run_sum, mask=rows < M)
    else:
        tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows < M)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(x, _lse_kernel)
