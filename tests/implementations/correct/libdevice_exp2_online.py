"""Online over BLOCK_N tiles in base 2, through libdevice reached by a module alias.

    out[i] = m_i + ln(2) * log2(sum_j 2^((x[i, j] - m_i) * log2(e)))

The flash-attention habit: scale by log2(e) once and use the GPU's base-2 units, here through CUDA's
libdevice under a module-level alias (``from triton.language.extra import libdevice as
tl_libdevice``, as training libraries import it) rather than ``tl.exp2``. As in
``exp2_based.py``, the difference x - m is taken before the multiply (x * log2(e) alone overflows
for |x| near float32's largest) and the max is added back in natural units.

One program per row, a scalar running max and a rescaled running sum; each tile's NaN and +inf
are counted and replaced by -inf, so the running values see finite numbers and -inf only; the
shift is the new max while it is finite and 0 for an all -inf prefix (every term is then 0).
libdevice has float32 and float64 versions only: 16-bit input is widened to float32, float64 stays
float64. Columns are 64-bit where an offset reaches 2**31 - 1. Output: float32; float64 for float64.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice as tl_libdevice  # noqa: E402

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
LN2: tl.constexpr = tl.constexpr(0.6931471805599453)
INT32_LIMIT = 2**31 - 1


@triton.jit
def _exp2_online_kernel(x_ptr, out_ptr, N, stride_row, stride_col, BLOCK_N: tl.constexpr, WIDE_COLS: tl.constexpr):
    acc_dtype = out_ptr.dtype.element_ty
    row_ptr = x_ptr + tl.program_id(0).to(tl.int64) * stride_row
    run_max = tl.full([], -float("inf"), acc_dtype)
    run_sum = tl.zeros([], acc_dtype)
    saw_nan = tl.zeros([], tl.int32)
    saw_pos_inf = tl.zeros([], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        if WIDE_COLS:
            cols = cols.to(tl.int64)
        x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(acc_dtype)
        is_nan = x != x
        is_pos_inf = x == float("inf")
        saw_nan = tl.maximum(saw_nan, tl.max(is_nan.to(tl.int32), axis=0))
        saw_pos_inf = tl.maximum(saw_pos_inf, tl.max(is_pos_inf.to(tl.int32), axis=0))
        x = tl.where(is_nan | is_pos_inf, -float("inf"), x)
        new_max = tl.maximum(run_max, tl.max(x, axis=0))
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        rescale = tl_libdevice.exp2((run_max - shift) * LOG2E)  # exp2(-inf) = 0 for an empty prefix
        run_sum = run_sum * rescale + tl.sum(tl_libdevice.exp2((x - shift) * LOG2E), axis=0)
        run_max = new_max
    result = tl.where(run_max == -float("inf"), -float("inf"), run_max + tl_libdevice.log2(run_sum) * LN2)
    result = tl.where(saw_pos_inf > 0, float("inf"), result)
    tl.store(out_ptr + tl.program_id(0), tl.where(saw_nan > 0, float("nan"), result))


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float64 if x.dtype == torch.float64 else torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 4096)
    wide_cols = (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    _exp2_online_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK_N=block_n, WIDE_COLS=wide_cols,
                                 num_warps=4 if block_n <= 1024 else 8)
    return out
