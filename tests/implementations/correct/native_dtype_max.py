"""The row max found in the input's own dtype, widened only for the exp and the sum.

    pass 1 (input dtype):  per lane m = maximum(m, x); NaN and +inf seen by comparisons
    pass 2 (float32):      out = m + log(sum_j exp(x_j - m))

A max never rounds, so taking it in bfloat16 or float16 is exact, and it saves the conversion of
every element in pass 1: a style some hand-written kernels use. Pass 1 keeps a vector of per-lane
maxima and comparisons in the input dtype, reduced across lanes once per row, after widening.

Edge cases: pass 1 counts NaN (x != x) and +inf (x == inf) entries; a row with either, or with
every entry -inf, skips pass 2 with its answer known (NaN before +inf, as torch does).

Output: float32 (float64 for float64 input, which stays in float64 throughout).
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _native_max_kernel(x_ptr, out_ptr, N, stride_row, stride_col,
                       BLOCK_N: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = x_ptr + row * stride_row
    lanes = tl.arange(0, BLOCK_N).to(tl.int64)

    lane_max = tl.full([BLOCK_N], -float("inf"), x_ptr.dtype.element_ty)
    odd = tl.zeros([BLOCK_N], tl.int32)  # per lane: 1 for a NaN seen, 2 for a +inf seen
    for start in range(0, N, BLOCK_N):
        cols = start + lanes
        x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf"))
        odd |= tl.where(x != x, 1, 0) | tl.where(x == float("inf"), 2, 0)
        # In the input dtype, exact. Triton 3.6 widens a bfloat16 maximum to float32 (3.9 keeps
        # bfloat16); narrowing the max of bfloat16 values back is exact either way.
        lane_max = tl.maximum(lane_max, x).to(lane_max.dtype)
    flags = tl.reduce_or(odd, axis=0)
    row_max = tl.max(lane_max.to(ACC), axis=0)

    if (flags & 1) != 0:
        result = tl.full([], float("nan"), ACC)
    elif (flags & 2) != 0:
        result = tl.full([], float("inf"), ACC)
    elif row_max == -float("inf"):
        result = tl.full([], -float("inf"), ACC)
    else:
        total = tl.zeros([BLOCK_N], ACC)
        for start in range(0, N, BLOCK_N):
            cols = start + lanes
            x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(ACC)
            total += tl.exp(x - row_max)
        result = row_max + tl.log(tl.sum(total, axis=0))
    tl.store(out_ptr + row, result)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor (float32 out; float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    wide = x.dtype == torch.float64
    out = torch.empty(rows, dtype=torch.float64 if wide else torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 1024)
    _native_max_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK_N=block_n,
                                ACC=tl.float64 if wide else tl.float32, num_warps=4)
    return out
