"""tl.reduce over (max, sum) pairs with a custom combine function: the reduction is the algorithm.

    each entry x becomes a pair (x, 1);  combine((m_a, s_a), (m_b, s_b)) = (m, s_a e^(m_a - m) + s_b e^(m_b - m)),
    m = max(m_a, m_b);  out = m + log(s) of the pair that reduces a whole row

The associative "online softmax" monoid (Milakov and Gimelshein 2018; the form jax.nn.logsumexp-
style scans and the Triton scan/reduce tests use with tuple operands): because the combine is
associative and commutative, tl.reduce may merge lanes in any tree order. BLOCK_M rows per
program; each tile is reduced to one pair per row with tl.reduce, and the tiles' pairs are merged
into a running pair with the same combine function.

Edge cases live in the pair encoding and the combine: a -inf entry is (-inf, 0), a +inf entry
(+inf, 1), a NaN entry (-inf, NaN) so that the NaN rides in the sum and survives every merge
(NaN * 0 = NaN), masked lanes are (-inf, 0), the identity. The combine's weight is 1 when a side's
max equals the merged max (so -inf and +inf never meet themselves in a subtraction) and
exp(-inf) = 0 for a side far below.

Output: the input's dtype (float16/bfloat16 accumulate in float32 and round at the store; float64
accumulates in float64). Index math is 64-bit when the host sees an offset reach 2**31 - 1.
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
def _combine(max_a, sum_a, max_b, sum_b):
    """The (max, sum of exp(x - max)) monoid; associative and commutative, identity (-inf, 0)."""
    new_max = tl.maximum(max_a, max_b)
    weight_a = tl.where(max_a == new_max, 1.0, tl.exp(max_a - new_max))
    weight_b = tl.where(max_b == new_max, 1.0, tl.exp(max_b - new_max))
    return new_max, sum_a * weight_a + sum_b * weight_b


@triton.jit
def _reduce_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr, ACC_DTYPE: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    lanes = tl.arange(0, BLOCK_N)
    if INT64:
        rows = rows.to(tl.int64)
        lanes = lanes.to(tl.int64)
    row_ptrs = x_ptr + rows[:, None] * stride_row
    run_max = tl.full([BLOCK_M], -float("inf"), ACC_DTYPE)
    run_sum = tl.zeros([BLOCK_M], ACC_DTYPE)
    for start in range(0, N, BLOCK_N):
        cols = start + lanes
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(ACC_DTYPE)
        # Encode each entry as a pair: (x, 1); -inf -> (-inf, 0); NaN -> (-inf, NaN).
        pair_max = tl.where(x != x, -float("inf"), x)
        pair_sum = tl.where(x == -float("inf"), 0.0, 1.0).to(ACC_DTYPE)
        pair_sum = tl.where(x != x, float("nan"), pair_sum)
        tile_max, tile_sum = tl.reduce((pair_max, pair_sum), 1, _combine)
        run_max, run_sum = _combine(run_max, run_sum, tile_max, tile_sum)
    infinite = (run_max == float("inf")) | (run_max == -float("inf"))
    result = tl.where(infinite, run_max, run_max + tl.log(run_sum))
    result = tl.where(run_sum != run_sum, float("nan"), result)
    tl.store(out_ptr + rows, result.to(out_ptr.dtype.element_ty), mask=row_mask)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor, returned in x's dtype."""
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
    block_n = min(triton.next_power_of_2(cols), 1024)
    block_m = min(triton.next_power_of_2(rows), max(1, 2048 // block_n))
    int64 = (rows - 1) * abs(x.stride(0)) + (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    acc_dtype = tl.float64 if x.dtype == torch.float64 else tl.float32
    _reduce_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, INT64=int64, ACC_DTYPE=acc_dtype, num_warps=8 if block_m * block_n >= 2048 else 4)
    return out
