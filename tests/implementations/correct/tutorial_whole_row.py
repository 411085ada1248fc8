"""Triton tutorial 02-fused-softmax style: the whole row in one register tile, persistent programs.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i))

As in the tutorial, BLOCK = next_power_of_2(N) so one masked load brings a whole row into
registers, the max and the sum are two reductions over that tile, and a fixed number of
programs loop over the rows with ``tl.range(start, M, step)`` (the tutorial sizes the grid from
occupancy; here a few programs per SM on a GPU, a handful under the interpreter). The tutorial
kernel is only right while a row fits in one tile; this file keeps it GPU-realistic by using the
whole-row kernel up to 8192 columns and a looped kernel (one program per row, online rescaling
over 4096-wide tiles) beyond.

Edge cases: the max skips NaN; a NaN flag is kept separately; the shift is the max when finite
and 0 otherwise (all -inf rows sum exp(-inf) = 0, +inf rows sum to +inf); the final select
returns NaN, then the max itself when it is infinite, else max + log(sum).

Output: the input's dtype (float16 and bfloat16 accumulate in float32 and round once at the
store; float64 accumulates in float64). Row offsets are 64-bit (a 64-bit row pointer advanced by a
64-bit step per iteration); column offsets are 64-bit when the host sees (N - 1) * |stride_col| reach 2**31 - 1.
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
WHOLE_ROW_LIMIT = 8192  # widest row kept in one register tile
LOOP_BLOCK = 4096


@triton.jit
def _finish(row_max, row_sum, saw_nan):
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    result = tl.where(infinite, row_max, row_max + tl.log(row_sum))
    return tl.where(saw_nan, float("nan"), result)


@triton.jit
def _whole_row_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                      BLOCK: tl.constexpr, WIDE_COLS: tl.constexpr, ACC_DTYPE: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64)
    row_step = tl.num_programs(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    if WIDE_COLS:
        cols = cols.to(tl.int64)
    col_mask = cols < N
    col_offsets = cols * stride_col
    # The row pointer advances by a 64-bit step instead of being recomputed as row_idx * stride_row:
    # under the interpreter the loop index is a Python int, whose product with an int32 stride
    # argument wraps at 2**31 (in compiled code the 64-bit bounds would make it 64-bit).
    row_ptr = x_ptr + row_start * stride_row
    row_ptr_step = row_step * stride_row
    for row_idx in tl.range(row_start, M, row_step):
        # Lanes past N read -inf: they lose the max and contribute exp(-inf) = 0.
        x = tl.load(row_ptr + col_offsets, mask=col_mask, other=-float("inf")).to(ACC_DTYPE)
        saw_nan = tl.max((x != x).to(tl.int32), axis=0) > 0
        row_max = tl.max(tl.where(x != x, -float("inf"), x), axis=0)
        shift = tl.where((row_max == float("inf")) | (row_max == -float("inf")), 0.0, row_max)
        row_sum = tl.sum(tl.exp(x - shift), axis=0)
        tl.store(out_ptr + row_idx, _finish(row_max, row_sum, saw_nan).to(out_ptr.dtype.element_ty))
        row_ptr += row_ptr_step


@triton.jit
def _looped_row_kernel(x_ptr, out_ptr, N, stride_row, stride_col,
                       BLOCK: tl.constexpr, WIDE_COLS: tl.constexpr, ACC_DTYPE: tl.constexpr):
    row_idx = tl.program_id(0).to(tl.int64)
    row_ptr = x_ptr + row_idx * stride_row
    row_max = tl.full([], -float("inf"), ACC_DTYPE)
    row_sum = tl.zeros([], ACC_DTYPE)
    saw_nan = tl.zeros([], tl.int32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        if WIDE_COLS:
            cols = cols.to(tl.int64)
        x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(ACC_DTYPE)
        saw_nan = tl.maximum(saw_nan, tl.max((x != x).to(tl.int32), axis=0))
        new_max = tl.maximum(row_max, tl.max(tl.where(x != x, -float("inf"), x), axis=0))
        shift = tl.where((new_max == float("inf")) | (new_max == -float("inf")), 0.0, new_max)
        # exp(old - new) is 1 when the max is unchanged (-inf -> -inf, +inf -> +inf: no NaN) and
        # exp(-inf) = 0 when it grows from -inf (the old sum is 0 then).
        rescale = tl.where(row_max == new_max, 1.0, tl.exp(row_max - new_max))
        row_sum = row_sum * rescale + tl.sum(tl.exp(x - shift), axis=0)
        row_max = new_max
    tl.store(out_ptr + row_idx, _finish(row_max, row_sum, saw_nan > 0).to(out_ptr.dtype.element_ty))


def _num_programs(rows: int, device: torch.device) -> int:
    if device.type == "cuda":
        return min(rows, 4 * torch.cuda.get_device_properties(device).multi_processor_count)
    return min(rows, 8)  # the interpreter runs programs one after another: few programs, long loops


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
    acc_dtype = tl.float64 if x.dtype == torch.float64 else tl.float32
    wide_cols = (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    if cols <= WHOLE_ROW_LIMIT:
        block = triton.next_power_of_2(cols)
        num_warps = 4 if block < 2048 else (8 if block < 4096 else 16)  # the tutorial's rule
        _whole_row_kernel[(_num_programs(rows, x.device),)](
            x, out, rows, cols, x.stride(0), x.stride(1),
            BLOCK=block, WIDE_COLS=wide_cols, ACC_DTYPE=acc_dtype, num_warps=num_warps)
    else:
        _looped_row_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1),
                                    BLOCK=LOOP_BLOCK, WIDE_COLS=wide_cols, ACC_DTYPE=acc_dtype, num_warps=8)
    return out
