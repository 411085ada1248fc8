"""Liger-style column loop: full tiles load with no mask, only the last (partial) tile is masked.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i))

Liger-Kernel and many hand-tuned Triton reductions split the column loop into N // BLOCK_N full
tiles, loaded without a mask (no per-element predicate, so the compiler can vectorize), and one
masked tail tile, handled once after the loop. Here a program owns BLOCK_M rows; rows past M are
clamped to row M - 1 (they re-read a real row and are never stored), so full tiles need no row
mask either. The tile update is shared by the loop and the tail (one @triton.jit helper), the
usual way to keep the two from drifting apart.

Edge cases, "clean and flag" per row: NaN and +inf entries are counted and then replaced by -inf,
so the online (max, sum) arithmetic only sees finite values and -inf; the shift is the max when
finite and 0 for a row that is all -inf so far, and the old sum is rescaled by exp(old_max -
shift), which is exp(-inf) = 0 while the row was empty. The counts decide the answer at the end:
NaN, then +inf, then an all -inf row, then max + log(sum).

Output: float32 for float16, bfloat16, float32 (accumulated in float32); float64 for float64.
Row offsets are always 64-bit; column offsets 64-bit when (N - 1) * |stride_col| reaches 2**31 - 1.
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
def _fold_tile(x, run_max, run_sum, nan_count, pos_inf_count):
    """Fold one (BLOCK_M, BLOCK_N) tile (already in the accumulation dtype) into the row state."""
    is_nan = x != x
    is_pos_inf = x == float("inf")
    nan_count += tl.sum(is_nan.to(tl.int32), axis=1)
    pos_inf_count += tl.sum(is_pos_inf.to(tl.int32), axis=1)
    x = tl.where(is_nan | is_pos_inf, -float("inf"), x)
    new_max = tl.maximum(run_max, tl.max(x, axis=1))
    shift = tl.where(new_max == -float("inf"), 0.0, new_max)
    run_sum = run_sum * tl.exp(run_max - shift) + tl.sum(tl.exp(x - shift[:, None]), axis=1)
    return new_max, run_sum, nan_count, pos_inf_count


@triton.jit
def _lse_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, WIDE_COLS: tl.constexpr, ACC_DTYPE: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    read_rows = tl.minimum(rows, M - 1).to(tl.int64)  # clamped: no row mask on the loads
    row_ptrs = x_ptr + read_rows[:, None] * stride_row
    lanes = tl.arange(0, BLOCK_N)
    if WIDE_COLS:
        lanes = lanes.to(tl.int64)
    run_max = tl.full([BLOCK_M], -float("inf"), ACC_DTYPE)
    run_sum = tl.zeros([BLOCK_M], ACC_DTYPE)
    nan_count = tl.zeros([BLOCK_M], tl.int32)
    pos_inf_count = tl.zeros([BLOCK_M], tl.int32)
    full_end = (N // BLOCK_N) * BLOCK_N
    for start in range(0, full_end, BLOCK_N):
        cols = start + lanes
        x = tl.load(row_ptrs + cols[None, :] * stride_col).to(ACC_DTYPE)  # full tile: no mask
        run_max, run_sum, nan_count, pos_inf_count = _fold_tile(x, run_max, run_sum, nan_count, pos_inf_count)
    if full_end < N:
        cols = full_end + lanes
        # The tail: lanes past N read -inf (lose the max, add exp(-inf) = 0).
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=(cols < N)[None, :], other=-float("inf"))
        run_max, run_sum, nan_count, pos_inf_count = _fold_tile(
            x.to(ACC_DTYPE), run_max, run_sum, nan_count, pos_inf_count)
    result = tl.where(run_max == -float("inf"), -float("inf"), run_max + tl.log(run_sum))
    result = tl.where(pos_inf_count > 0, float("inf"), result)
    result = tl.where(nan_count > 0, float("nan"), result)
    tl.store(out_ptr + rows, result, mask=rows < M)


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
    block_n = min(triton.next_power_of_2(cols), 2048)
    block_m = min(triton.next_power_of_2(rows), max(1, 4096 // block_n))
    wide_cols = (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    acc_dtype = tl.float64 if x.dtype == torch.float64 else tl.float32
    _lse_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, WIDE_COLS=wide_cols, ACC_DTYPE=acc_dtype,
        num_warps=8 if block_m * block_n >= 2048 else 4)
    return out
