"""Several rows per program with 2-D tiles: BLOCK_M rows x BLOCK_N columns, masked on both axes.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i))

The shape batched-reduction kernels take when rows are short (LayerNorm/RMSNorm forward kernels
in Liger-Kernel and unsloth, "rows per program" launches): a program owns BLOCK_M consecutive rows
so short rows still give every program a full tile, and walks them in (BLOCK_M, BLOCK_N) tiles.
Each row keeps an online (max, rescaled sum) pair as a [BLOCK_M] vector. Rows past M are masked
(they read -inf and are never stored); columns past N are masked the same way.

Edge cases with a "finite shift" helper: the value subtracted before exp is the row max where it is
finite and 0 otherwise; the rescale factor is exp(old - new) of those shifts, and 0 while the row
has been all -inf so far (its sum is 0: exp(0 - (-1e30)) would make it 0 * inf = NaN). NaN is excluded from the max and passed into the sum, where it stays;
+inf becomes the max. The end: NaN sum -> NaN; infinite max -> the max; else max + log(sum).

Output: float32 (accumulated in float32) for float16, bfloat16, float32; float64 (accumulated in
float64) for float64. Index math is 64-bit when the host sees an offset reach 2**31 - 1.
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
TILE_ELEMENTS = 4096  # BLOCK_M * BLOCK_N: fits in registers at 4-8 warps


@triton.jit
def _finite_shift(m):
    """m where finite, else 0: subtracting it can never produce inf - inf or -inf - (-inf)."""
    return tl.where((m == float("inf")) | (m == -float("inf")), 0.0, m)


@triton.jit
def _multi_row_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    acc_dtype = out_ptr.dtype.element_ty
    row_offsets = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    col_lanes = tl.arange(0, BLOCK_N)
    row_mask = row_offsets < M
    if INT64:
        row_offsets = row_offsets.to(tl.int64)
        col_lanes = col_lanes.to(tl.int64)
    row_ptrs = x_ptr + row_offsets[:, None] * stride_row
    row_max = tl.full([BLOCK_M], -float("inf"), acc_dtype)
    row_sum = tl.zeros([BLOCK_M], acc_dtype)
    for start in range(0, N, BLOCK_N):
        col_offsets = start + col_lanes
        mask = row_mask[:, None] & (col_offsets < N)[None, :]
        tile = tl.load(row_ptrs + col_offsets[None, :] * stride_col, mask=mask, other=-float("inf")).to(acc_dtype)
        new_max = tl.maximum(row_max, tl.max(tl.where(tile != tile, -float("inf"), tile), axis=1))
        new_shift = _finite_shift(new_max)
        # Rescale by exp(old_shift - new_shift) only where the old max is > -inf. An all -inf prefix
        # has sum 0 (or NaN) and a shift of 0, and exp(0 - new_shift) overflows for a max far below
        # zero (-1e30): 0 * inf would be NaN. Where the max jumps to +inf the factor may overflow,
        # harmlessly: the row's answer is +inf (or NaN) whatever the sum holds.
        rescale = tl.where(row_max == -float("inf"), 0.0, tl.exp(_finite_shift(row_max) - new_shift))
        row_sum = row_sum * rescale
        row_sum += tl.sum(tl.exp(tile - new_shift[:, None]), axis=1)
        row_max = new_max
    is_infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    result = tl.where(is_infinite, row_max, row_max + tl.log(row_sum))
    result = tl.where(row_sum != row_sum, float("nan"), result)
    tl.store(out_ptr + row_offsets, result, mask=row_mask)


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
    block_n = min(triton.next_power_of_2(cols), 1024)
    block_m = min(triton.next_power_of_2(rows), TILE_ELEMENTS // block_n)
    int64 = (rows - 1) * abs(x.stride(0)) + (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    _multi_row_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, INT64=int64, num_warps=8 if block_m * block_n >= 2048 else 4)
    return out
