"""Mutant: the kernel writes the shifted tile back into its input, using it as scratch space.

Bug: after folding each tile, the kernel stores x - run_max over the tile it read; the answer it
returns is right, the caller's tensor is not.

Pitfall: fused softmax/cross-entropy kernels save memory by writing intermediates (or gradients)
over their input. A Triton ``tl.store`` does not bump PyTorch's version counter, so autograd
cannot notice that a tensor it saved for backward (the logits) was overwritten, and every later
reader of the input sees shifted values. An LSE is a pure reduction: its input must come back
bit for bit as it went in.

Documented: unslothai/unsloth#5002 (cross-entropy backward writes gradients into the logits in
place); linkedin/Liger-Kernel#1251 (``inplace=False``, "Triton writes don't bump PyTorch's tensor
version counter").

Killed by: ``input_unchanged`` (first to fire: it runs before agreement); ``determinism`` also
catches it (the second call sees the overwritten input).

Minimal input: ``[[1.0]]`` -> the result is right (1.0), but x[0, 0] is 0.0 afterwards.
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
        # BUG: the shifted tile is written back into the input, as scratch for a later pass.
        tl.store(row_ptrs + cols[None, :] * stride_col, (x - run_max[:, None]).to(x.dtype))
    tail = col_begin + full_tiles * BLOCK_N
    if tail < col_end:
        cols = tail + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        # Masked lanes read -inf: they lose every max comparison and add exp(-inf) = 0 to the sum.
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=(cols < col_end)[None, :], other=-float("inf"))
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
        tl.store(row_ptrs + cols[None, :] * stride_col, (x - run_max[:, None]).to(x.dtype),
                 mask=(cols < col_end)[None, :])
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
    return torch.tensor([[1.0]]).to(kernel_device())
