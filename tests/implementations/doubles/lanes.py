"""Correct, written differently: every lane keeps its own running (max, sum) across tiles; the
lanes are merged once at the end.

    lane k:  m_k = max over its entries,  s_k = sum exp(x - m_k)
    row:     m = max_k m_k,  out = m + log(sum_k s_k * exp(m_k - m))
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl


@triton.jit
def _lanes_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    row_ptrs = x_ptr + rows.to(tl.int64)[:, None] * stride_row
    dtype = out_ptr.dtype.element_ty
    lane_max = tl.full([BLOCK_M, BLOCK_N], -float("inf"), dtype)
    lane_sum = tl.zeros([BLOCK_M, BLOCK_N], dtype)
    nan_count = tl.zeros([BLOCK_M], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(dtype)
        nan_count += tl.sum((x != x).to(tl.int32), axis=1)
        x = tl.where(x == x, x, -float("inf"))
        new_max = tl.maximum(lane_max, x)
        finite = (new_max != float("inf")) & (new_max != -float("inf"))
        shift = tl.where(finite, new_max, 0.0)
        lane_sum = lane_sum * tl.where(lane_max == new_max, 1.0, tl.exp(lane_max - new_max)) + tl.exp(x - shift)
        lane_max = new_max
    row_max = tl.max(lane_max, axis=1)
    scale = tl.where(lane_max == row_max[:, None], 1.0, tl.exp(lane_max - row_max[:, None]))
    row_sum = tl.sum(lane_sum * scale, axis=1)
    finite = (row_max != float("inf")) & (row_max != -float("inf"))
    result = tl.where(finite, row_max + tl.log(row_sum), row_max)
    result = tl.where(nan_count > 0, float("nan"), result)
    tl.store(out_ptr + rows, result, mask=row_mask)


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    block_n = max(32, min(triton.next_power_of_2(cols), 1024))
    block_m = min(triton.next_power_of_2(rows), max(1, 8192 // block_n))
    _lanes_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1), BLOCK_M=block_m, BLOCK_N=block_n)
    return out
