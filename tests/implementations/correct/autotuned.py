"""Autotuned over (BLOCK_N, num_warps) keyed on N; per-lane streaming with one exp per element.

    lane k of the tile keeps (m_k, s_k) over the entries it has seen, s_k = sum exp(x - m_k)
    row:  m = max_k m_k,  out = m + log(sum_k s_k * exp(m_k - m))

@triton.autotune picks the tile width and warp count per distinct N on the first call (the
pattern of the Triton matmul tutorial and of many FlagGems/Liger kernels that tune reduction
widths). One program per row. Inside the loop nothing is reduced across lanes: each lane folds
its new entry into its own pair with a single exp, exp(-|x - m_k|), which is either the new term
(x <= m_k) or the rescale factor of the old sum (x > m_k, and the new term is then exactly 1).
The lanes are merged once, after the loop.

Edge cases per lane: NaN entries are counted (and kept out of the max); -inf entries add nothing
(no -inf - (-inf)); equal entries (+inf beside +inf) give a factor of 1 (no inf - inf). The
merge weights are 1 where a lane's max equals the row max and exp(-inf) = 0 for empty lanes.

Output: float32 for float16, bfloat16, float32 (accumulated in float32); float64 for float64
(accumulated in float64). Row offsets are 64-bit; column offsets are 64-bit when the host sees
(N - 1) * |stride_col| reach 2**31 - 1.

Under Triton's interpreter (no GPU), autotuned launches fail today ("0 active drivers"): the
configurations are verified there by launching ``_lse_lanes_kernel.fn`` with each config directly.
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

CONFIGS = [
    triton.Config({"BLOCK_N": 256}, num_warps=2),
    triton.Config({"BLOCK_N": 1024}, num_warps=4),
    triton.Config({"BLOCK_N": 2048}, num_warps=8),
    triton.Config({"BLOCK_N": 4096}, num_warps=8),
]


@triton.autotune(configs=CONFIGS, key=["N"])
@triton.jit
def _lse_lanes_kernel(x_ptr, out_ptr, N, stride_row, stride_col,
                      BLOCK_N: tl.constexpr, WIDE_COLS: tl.constexpr):
    acc_dtype = out_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    row_ptr = x_ptr + row * stride_row
    lane_max = tl.full([BLOCK_N], -float("inf"), acc_dtype)
    lane_sum = tl.zeros([BLOCK_N], acc_dtype)
    lane_nans = tl.zeros([BLOCK_N], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        if WIDE_COLS:
            cols = cols.to(tl.int64)
        x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(acc_dtype)
        lane_nans += (x != x).to(tl.int32)
        x = tl.where(x != x, -float("inf"), x)
        grows = x > lane_max
        # exp(-|x - m|), written so that equal infinities give exp(0) = 1 instead of exp(NaN).
        factor = tl.where(x == lane_max, 1.0, tl.exp(tl.where(grows, lane_max - x, x - lane_max)))
        folded = tl.where(grows, lane_sum * factor + 1.0, lane_sum + factor)
        lane_sum = tl.where(x == -float("inf"), lane_sum, folded)  # -inf (and masked) lanes add 0
        lane_max = tl.maximum(lane_max, x)
    row_max = tl.max(lane_max, axis=0)
    weights = tl.where(lane_max == row_max, 1.0, tl.exp(lane_max - row_max))
    row_sum = tl.sum(lane_sum * weights, axis=0)
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    result = tl.where(infinite, row_max, row_max + tl.log(row_sum))
    result = tl.where(tl.sum(lane_nans, axis=0) > 0, float("nan"), result)
    tl.store(out_ptr + row, result)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float64 if x.dtype == torch.float64 else torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    wide_cols = (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    _lse_lanes_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), WIDE_COLS=wide_cols)
    return out
