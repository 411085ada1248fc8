"""Two passes over each row, one program per row: pass 1 the max, pass 2 the sum of exp(x - max).

    m_i = max_j x[i, j]                      (pass 1, NaN entries counted instead of compared)
    out[i] = m_i + log(sum_j exp(x[i, j] - m_i))   (pass 2, only when m_i is finite)

The textbook "safe softmax" normalizer split into its two reductions, as in the unfused
three-kernel form (max kernel, exp-sum kernel, log-add) but fused into one program per row that
reads the row twice (2x the traffic of the online form; no rescaling at all, so every term is
shifted by the exact row max).

Edge cases by counting and branching: pass 1 counts NaN entries (tl.max would skip them) and
+inf entries, and takes the max over the other entries. A row whose max is not finite (all -inf,
or +inf present) skips pass 2 entirely: its answer is already known. So exp never sees
inf - inf or -inf - (-inf).

Output: float32 for every input dtype (float64 input is accumulated in float64 and rounded to
float32 at the store, so a float64 row whose lse lies past float32's range comes out +-inf).
All index math is 64-bit, always.
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
def _two_pass_kernel(x_ptr, out_ptr, N, stride_row, stride_col,
                     BLOCK_N: tl.constexpr, ACC_DTYPE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = x_ptr + row * stride_row
    lanes = tl.arange(0, BLOCK_N).to(tl.int64)

    # Pass 1: the max over the entries that are neither NaN nor +inf, and how many of those exist.
    row_max = tl.full([], -float("inf"), ACC_DTYPE)
    nan_count = tl.zeros([], tl.int32)
    pos_inf_count = tl.zeros([], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + lanes
        x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(ACC_DTYPE)
        nan_count += tl.sum((x != x).to(tl.int32), axis=0)
        pos_inf_count += tl.sum((x == float("inf")).to(tl.int32), axis=0)
        ordinary = (x == x) & (x != float("inf"))
        row_max = tl.maximum(row_max, tl.max(tl.where(ordinary, x, -float("inf")), axis=0))

    if nan_count > 0:
        result = tl.full([], float("nan"), ACC_DTYPE)
    elif pos_inf_count > 0:
        result = tl.full([], float("inf"), ACC_DTYPE)
    elif row_max == -float("inf"):
        result = tl.full([], -float("inf"), ACC_DTYPE)
    else:
        # Pass 2: row_max is finite and every entry is finite or -inf, so each term is in [0, 1].
        row_sum = tl.zeros([], ACC_DTYPE)
        for start in range(0, N, BLOCK_N):
            cols = start + lanes
            x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(ACC_DTYPE)
            row_sum += tl.sum(tl.exp(x - row_max), axis=0)
        result = row_max + tl.log(row_sum)
    tl.store(out_ptr + row, result.to(out_ptr.dtype.element_ty))


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output for every input dtype."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 2048)
    acc_dtype = tl.float64 if x.dtype == torch.float64 else tl.float32
    _two_pass_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1),
                              BLOCK_N=block_n, ACC_DTYPE=acc_dtype, num_warps=4 if block_n <= 512 else 8)
    return out
