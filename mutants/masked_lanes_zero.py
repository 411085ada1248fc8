"""Mutant: masked lanes of the tail tile load 0.0 instead of -inf.

Bug: the tail load uses ``other=0.0``; the lanes past the end of the row then hold 0.0.

Pitfall: ``other=`` is the value a masked lane takes, and it does double duty: it must lose every
max comparison and contribute exp(-inf) = 0 to the sum. With 0.0 each masked lane adds exp(0 - m)
to the sum (1 for a row whose max is 0), and for a row whose entries are all below 0 it becomes
the max itself. Rows whose length is a multiple of the tile width have no masked lanes, so the
bug hides on power-of-two test shapes.

Documented: Triton tutorial 02-fused-softmax (the row is loaded with ``other=-float('inf')``, "so
that it does not affect the max"); V. Guerra, "Triton: Row-Wise LogSumExp", pitfalls ("masked
lanes with 0.0").

Killed by: ``agreement`` (first to fire); also ``bounds`` for rows below zero (the result exceeds
max + log N), and ``shift_invariance`` and ``fresh_values`` (a masked lane adds exp(0 - m), which
does not move with the row's values).

Minimal input: ``[[0.0, 0.0, 0.0]]`` (N = 3: a 4-wide tile with one masked lane) -> expected
log 3 = 1.0986, got log 4 = 1.3863.
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
        # BUG: masked lanes read 0.0, so each adds exp(0 - m) to the sum (and 0 may become the max).
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=(cols < col_end)[None, :], other=0.0)
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
    return torch.zeros(1, 3).to(kernel_device())
