"""Broken (memory_bounds) in 16-bit dtypes only: right values, but its row block is sized in bytes
(two rows a program for a 2-byte dtype, one for the others, as a kernel with tiles of a fixed byte
size has) and its store is masked with ``rows <= M``: with 16-bit input and an odd M, the last
program stores one element past the output. With float32 input every program holds one row, and
the mask never lets a row past M through.
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl


@triton.jit
def _row_block_kernel(x_ptr, out_ptr, M, N, stride_row, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    safe = tl.minimum(rows, M - 1).to(tl.int64)
    x = tl.load(x_ptr + safe[:, None] * stride_row + cols[None, :], mask=cols[None, :] < N,
                other=-float("inf")).to(out_ptr.dtype.element_ty)
    row_max = tl.max(tl.where(x == x, x, -float("inf")), axis=1)
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    shift = tl.where(infinite, 0.0, row_max)
    result = tl.where(infinite, row_max, shift + tl.log(tl.sum(tl.exp(x - shift[:, None]), axis=1)))
    nan = tl.max((x != x).to(tl.int32), axis=1) > 0
    tl.store(out_ptr + rows, tl.where(nan, float("nan"), result), mask=rows <= M)  # the bug: `<` is right


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    x = x if x.stride(1) == 1 else x.contiguous()
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    block_m = 2 if x.element_size() == 2 else 1
    _row_block_kernel[(triton.cdiv(rows, block_m),)](x, out, rows, cols, x.stride(0), BLOCK_M=block_m,
                                                    BLOCK_N=triton.next_power_of_2(cols))
    return out
