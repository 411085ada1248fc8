"""Broken (memory_bounds): right values, but every row is loaded whole, BLOCK lanes, unmasked, and
the lanes past N are discarded with tl.where. The last row's read runs past the end of the input:
on a GPU it lands in the allocator's slack and nothing is seen; every value check passes.
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl


@triton.jit
def _reads_past_kernel(x_ptr, out_ptr, N, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + cols).to(out_ptr.dtype.element_ty)  # no mask: the bug
    x = tl.where(cols < N, x, -float("inf"))
    row_max = tl.max(tl.where(x == x, x, -float("inf")), axis=0)
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    shift = tl.where(infinite, 0.0, row_max)
    result = tl.where(infinite, row_max, shift + tl.log(tl.sum(tl.exp(x - shift), axis=0)))
    tl.store(out_ptr + row, tl.where(tl.max((x != x).to(tl.int32), axis=0) > 0, float("nan"), result))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    x = x if x.stride(1) == 1 else x.contiguous()
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    _reads_past_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
