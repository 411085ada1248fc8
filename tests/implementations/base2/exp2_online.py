"""A base-2 LSE: out[i] = log2(sum_j e^x[i, j]) = m_i log2(e) + log2(sum_j 2^((x[i, j] - m_i) log2(e))).

The form a kernel whose consumers keep LSEs in base 2 computes (FlashInfer's attention returns its
LSE so; its merge kernels read it so): online over BLOCK_N tiles, one row per program, float32
throughout, the max scaled by log2(e) only at the end (m log2(e) overflows float32 past 2.36e38,
where the base-2 answer itself is past float32's range). -inf rows give -inf, +inf gives +inf, NaN
gives NaN. Output float32.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


@triton.jit
def _lse2_kernel(x_ptr, out_ptr, N, stride_row, stride_col, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    row = tl.program_id(0)
    if INT64:
        row = row.to(tl.int64)
    run_max = -float("inf")
    run_sum = 0.0
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < N, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(run_max, tl.max(tl.where(x == x, x, -float("inf")), axis=0))
        shift = tl.where((new_max == float("inf")) | (new_max == -float("inf")), 0.0, new_max)
        rescale = tl.where(run_max == new_max, 1.0, tl.exp2((run_max - new_max) * LOG2E))
        run_sum = run_sum * rescale + tl.sum(tl.exp2((x - shift) * LOG2E), axis=0)
        run_max = new_max
    infinite = (run_max == float("inf")) | (run_max == -float("inf"))
    result = tl.where(infinite, run_max, run_max * LOG2E + tl.log2(run_sum))
    result = tl.where(run_sum != run_sum, float("nan"), result)
    tl.store(out_ptr + row, result)


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    int64 = (rows - 1) * abs(x.stride(0)) + (cols - 1) * abs(x.stride(1)) >= 2**31 - 1
    _lse2_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK_N=min(triton.next_power_of_2(cols), 1024),
                          INT64=int64)
    return out
