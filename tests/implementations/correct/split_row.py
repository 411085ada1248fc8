"""Split rows: each row's columns are cut into splits, one program per (row block, split) writes a
partial (max, sum), and a second Triton kernel merges the partials of each row.

    partial (i, s):  m_is = max of x[i, cols of split s],  S_is = sum exp(x[i, j] - shift(m_is))
    merge:           m_i = max_s m_is,  S_i = sum_s S_is * w_is,  w_is = exp(m_is - m_i) (1 if m_is == m_i)
    out[i] = m_i + log(S_i)

The split-K / flash-decoding pattern (flash-attention's split-KV decoding, vLLM's paged attention v2
and its reduce kernel, FlagGems' two-stage reductions): a long row gets several programs, so a
handful of long rows can still fill the machine, at the cost of a (M, splits) scratch buffer and a
second launch. The first kernel owns BLOCK_M rows x one split, walking it in BLOCK_N tiles with
online rescaling; the combine kernel owns BLOCK_M rows and walks their partials BLOCK_S at a time,
merging them online the same way.

Partials carry the edge cases without a separate flag: an all -inf split is (-inf, 0); a split
holding +inf is (+inf, inf); a split holding NaN has a NaN sum. The weight w is 1 when the two
maxima are equal (so -inf == -inf and +inf == +inf never evaluate inf - inf) and exp(-inf) = 0 when a
split's max is -inf below a finite one.

Output: float32 (partials and merge in float32) for float16, bfloat16, float32; float64 (all in
float64) for float64. Index math: row and column offsets (and partial-buffer offsets) are always 64-bit.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

TILES_PER_SPLIT = 2  # a split is 2 tiles wide, so rows past 2 * BLOCK_N columns are split
MAX_SPLITS = 64


@triton.jit
def _merge(max_a, sum_a, max_b, sum_b):
    """Merge two (max, sum) pairs into one; NaN sums stay NaN."""
    new_max = tl.maximum(max_a, max_b)
    weight_a = tl.where(max_a == new_max, 1.0, tl.exp(max_a - new_max))
    weight_b = tl.where(max_b == new_max, 1.0, tl.exp(max_b - new_max))
    return new_max, sum_a * weight_a + sum_b * weight_b


@triton.jit
def _partial_kernel(x_ptr, part_max_ptr, part_sum_ptr, M, N, stride_row, stride_col, cols_per_split, splits,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    acc_dtype = part_max_ptr.dtype.element_ty
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    split = tl.program_id(1)
    row_mask = rows < M
    row_ptrs = x_ptr + rows.to(tl.int64)[:, None] * stride_row
    col_begin = split * cols_per_split
    col_end = tl.minimum(col_begin + cols_per_split, N)
    run_max = tl.full([BLOCK_M], -float("inf"), acc_dtype)
    run_sum = tl.zeros([BLOCK_M], acc_dtype)
    for start in range(col_begin, col_end, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        mask = row_mask[:, None] & (cols < col_end)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(acc_dtype)
        # The tile as a (max, sum) pair, then merged into the running pair.
        tile_max = tl.max(tl.where(x == x, x, -float("inf")), axis=1)
        tile_shift = tl.where((tile_max == float("inf")) | (tile_max == -float("inf")), 0.0, tile_max)
        tile_sum = tl.sum(tl.exp(x - tile_shift[:, None]), axis=1)
        run_max, run_sum = _merge(run_max, run_sum, tile_max, tile_sum)
    offsets = rows.to(tl.int64) * splits + split
    tl.store(part_max_ptr + offsets, run_max, mask=row_mask)
    tl.store(part_sum_ptr + offsets, run_sum, mask=row_mask)


@triton.jit
def _combine_kernel(part_max_ptr, part_sum_ptr, out_ptr, M, splits,
                    BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr):
    acc_dtype = part_max_ptr.dtype.element_ty
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    run_max = tl.full([BLOCK_M], -float("inf"), acc_dtype)
    run_sum = tl.zeros([BLOCK_M], acc_dtype)
    for start in range(0, splits, BLOCK_S):
        split_ids = start + tl.arange(0, BLOCK_S)
        mask = row_mask[:, None] & (split_ids < splits)[None, :]
        offsets = rows.to(tl.int64)[:, None] * splits + split_ids[None, :]
        # Missing partials are (-inf, 0), the identity of the merge.
        part_max = tl.load(part_max_ptr + offsets, mask=mask, other=-float("inf"))
        part_sum = tl.load(part_sum_ptr + offsets, mask=mask, other=0.0)
        block_max = tl.max(part_max, axis=1)  # partial maxima are never NaN
        weights = tl.where(part_max == block_max[:, None], 1.0, tl.exp(part_max - block_max[:, None]))
        block_sum = tl.sum(part_sum * weights, axis=1)
        run_max, run_sum = _merge(run_max, run_sum, block_max, block_sum)
    infinite = (run_max == float("inf")) | (run_max == -float("inf"))
    result = tl.where(infinite, run_max, run_max + tl.log(run_sum))
    result = tl.where(run_sum != run_sum, float("nan"), result)
    tl.store(out_ptr + rows, result, mask=row_mask)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    acc_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.empty(rows, dtype=acc_dtype, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 1024)
    splits = min(triton.cdiv(cols, TILES_PER_SPLIT * block_n), MAX_SPLITS)
    cols_per_split = triton.cdiv(triton.cdiv(cols, splits), block_n) * block_n  # whole tiles per split
    splits = triton.cdiv(cols, cols_per_split)  # every split holds at least one column
    block_m = min(triton.next_power_of_2(rows), max(1, 4096 // block_n))
    part_max = torch.empty((rows, splits), dtype=acc_dtype, device=x.device)
    part_sum = torch.empty((rows, splits), dtype=acc_dtype, device=x.device)
    _partial_kernel[(triton.cdiv(rows, block_m), splits)](
        x, part_max, part_sum, rows, cols, x.stride(0), x.stride(1), cols_per_split, splits,
        BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4 if block_m * block_n <= 1024 else 8)
    block_s = min(triton.next_power_of_2(splits), 64)
    combine_rows = min(triton.next_power_of_2(rows), max(1, 2048 // block_s))
    _combine_kernel[(triton.cdiv(rows, combine_rows),)](
        part_max, part_sum, out, rows, splits, BLOCK_M=combine_rows, BLOCK_S=block_s, num_warps=4)
    return out
