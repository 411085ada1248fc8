"""Half in, half out: float16/bfloat16 rows accumulated in float32 lane by lane, one rounding at the end.

    lane (r, k) keeps m_rk = max of the entries it saw, s_rk = sum exp(x - m_rk)
    row r:  m_r = max_k m_rk,  out[r] = round_to_input_dtype(m_r + log(sum_k s_rk * exp(m_rk - m_r)))

The mixed-precision contract of fused training kernels (e.g. Liger-Kernel and unsloth return
activations in the input dtype while reducing in float32): loads are upcast to float32, every
accumulator is float32, and the only rounding to float16/bfloat16 is the final store, which
keeps the result within about half an ulp of the output dtype. BLOCK_M rows per program; every
lane of the (BLOCK_M, BLOCK_N) tile keeps its own running max and rescaled sum across the column
loop (flash-attention's per-row statistics, here per lane), and the lanes of each row are merged
once after the loop.

Edge cases: NaN entries are counted per row and excluded from the max (the count decides the
result); the rescale factor exp(old - new) is taken as 1 when the lane's max did not change, so
-inf -> -inf and +inf -> +inf never evaluate inf - inf; terms use a shift that is the lane max
when finite and 0 otherwise.

Output: the input's dtype (float64 accumulates in float64). Index math 64-bit when the host sees an
offset reach 2**31 - 1.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

INT32_LIMIT = 2**31 - 1


@triton.jit
def _half_out_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr, ACC_DTYPE: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    lanes = tl.arange(0, BLOCK_N)
    if INT64:
        rows = rows.to(tl.int64)
        lanes = lanes.to(tl.int64)
    row_ptrs = x_ptr + rows[:, None] * stride_row
    lane_max = tl.full([BLOCK_M, BLOCK_N], -float("inf"), ACC_DTYPE)
    lane_sum = tl.zeros([BLOCK_M, BLOCK_N], ACC_DTYPE)
    nan_count = tl.zeros([BLOCK_M], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + lanes
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(ACC_DTYPE)
        nan_count += tl.sum((x != x).to(tl.int32), axis=1)
        x = tl.where(x != x, -float("inf"), x)
        new_max = tl.maximum(lane_max, x)
        shift = tl.where((new_max == float("inf")) | (new_max == -float("inf")), 0.0, new_max)
        rescale = tl.where(lane_max == new_max, 1.0, tl.exp(lane_max - new_max))
        lane_sum = lane_sum * rescale + tl.exp(x - shift)
        lane_max = new_max
    row_max = tl.max(lane_max, axis=1)
    weights = tl.where(lane_max == row_max[:, None], 1.0, tl.exp(lane_max - row_max[:, None]))
    row_sum = tl.sum(lane_sum * weights, axis=1)
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    result = tl.where(infinite, row_max, row_max + tl.log(row_sum))
    result = tl.where(nan_count > 0, float("nan"), result)
    tl.store(out_ptr + rows, result.to(out_ptr.dtype.element_ty), mask=row_mask)  # the one rounding


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor, returned in x's dtype (float32 accumulation)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 512)
    block_m = min(triton.next_power_of_2(rows), max(1, 2048 // block_n))
    int64 = (rows - 1) * abs(x.stride(0)) + (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    acc_dtype = tl.float64 if x.dtype == torch.float64 else tl.float32
    _half_out_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, INT64=int64, ACC_DTYPE=acc_dtype, num_warps=4 if block_m * block_n <= 512 else 8)
    return out
