"""Correct, written differently: one online pass with exp2 and log2 instead of exp and log.

    out[i] = m_i + ln(2) * log2(sum_j 2 ** ((x[i, j] - m_i) * log2(e)))

The scale by log2(e) is applied after subtracting the max, never to x itself: x * log2(e)
overflows for |x| above float max / 1.44.
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def _exp2_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    row_ptrs = x_ptr + rows.to(tl.int64)[:, None] * stride_row
    dtype = out_ptr.dtype.element_ty
    run_max = tl.full([BLOCK_M], -float("inf"), dtype)
    run_sum = tl.zeros([BLOCK_M], dtype)
    nan_count = tl.zeros([BLOCK_M], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(dtype)
        nan_count += tl.sum((x != x).to(tl.int32), axis=1)
        new_max = tl.maximum(run_max, tl.max(tl.where(x == x, x, -float("inf")), axis=1))
        finite = (new_max != float("inf")) & (new_max != -float("inf"))
        shift = tl.where(finite, new_max, 0.0)
        # Equal maxima (both -inf, both +inf, or unchanged) keep the sum as it is.
        scale = tl.where(run_max == new_max, 1.0, tl.exp2((run_max - new_max) * LOG2E))
        run_sum = run_sum * scale + tl.sum(tl.exp2((x - shift[:, None]) * LOG2E), axis=1)
        run_max = new_max
    finite = (run_max != float("inf")) & (run_max != -float("inf"))
    result = tl.where(finite, run_max + tl.log2(run_sum) * LN2, run_max)
    result = tl.where(nan_count > 0, float("nan"), result)
    tl.store(out_ptr + rows, result, mask=row_mask)


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    block_n = min(triton.next_power_of_2(cols), 2048)
    block_m = min(triton.next_power_of_2(rows), max(1, 16384 // block_n))
    _exp2_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1), BLOCK_M=block_m, BLOCK_N=block_n)
    return out
