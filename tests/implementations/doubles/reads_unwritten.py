"""Broken (uninitialized_read): right values on a fresh allocation, but each row's max goes through a
scratch buffer from torch.empty, and a row of all -inf skips storing it ("nothing to shift by"): the
kernel then reads back whatever the allocator left there. Any finite value there gives the right
answer (the row's result is shift + log 0 = -inf for every finite shift), zeros on a fresh page
included, so the value checks pass until the memory holds an infinity or a NaN. (On a GPU the
kernel also races: one thread stores the max and every thread loads it back with no barrier
between, so lanes of other warps read the slot before it is written; compute-sanitizer's initcheck
names that read on any row.)
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl


@triton.jit
def _reads_unwritten_kernel(x_ptr, scratch_ptr, out_ptr, N, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < N, other=-float("inf")).to(out_ptr.dtype.element_ty)
    row_max = tl.max(tl.where(x == x, x, -float("inf")), axis=0)
    tl.store(scratch_ptr + row, row_max, mask=row_max > -float("inf"))  # the bug: an empty row skips it
    shift = tl.load(scratch_ptr + row)
    shift = tl.where(row_max == float("inf"), 0.0, shift)
    result = tl.where(row_max == float("inf"), row_max, shift + tl.log(tl.sum(tl.exp(x - shift), axis=0)))
    tl.store(out_ptr + row, tl.where(tl.max((x != x).to(tl.int32), axis=0) > 0, float("nan"), result))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    scratch = torch.empty(rows, dtype=out_dtype, device=x.device)
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    _reads_unwritten_kernel[(rows,)](x, scratch, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
