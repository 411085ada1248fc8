"""Tiles merged by logaddexp, written as training libraries write Triton: aliases and a constexpr flag.

    lse_tile = m_t + log(sum_j exp(x[i, j] - m_t)),   lse <- hi + log1p(exp(lo - hi))   (lo <= hi)

The style of the LSE code of widely used training libraries, which the CPU used to refuse while a
GPU compiled it: libdevice reached through a module-level alias (``tl_libdevice``), its functions
bound to module-level names (``log1p = tl_libdevice.log1p``), ``tl.cast`` bound to another name
(``to_dtype = tl.cast``, a library's ``triton_cast``), and a constexpr flag choosing the store.

Each tile's LSE is merged into the running one with logaddexp; the merge's exp is written as
``expm1(lo - hi) + 1``, exact for the small differences where a plain exp loses digits near 1.
Edge cases: NaN and +inf are counted per tile and replaced by -inf; a tile of -inf only has
LSE -inf and leaves the running value alone (no -inf - -inf). The flag: 16-bit input is
accumulated in float32 and stored in its own dtype through an explicit cast (rounded once); float32
and float64 accumulate and store in their own type, the cast compiled out. One program per row,
64-bit offsets. Output: the input's dtype.
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

log1p = tl_libdevice.log1p
expm1 = tl_libdevice.expm1
to_dtype = tl.cast


@triton.jit
def _tiled_logaddexp_kernel(x_ptr, out_ptr, N, stride_row, stride_col, BLOCK_N: tl.constexpr,
                            ACC_DTYPE: tl.constexpr, CAST_OUTPUT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = x_ptr + row * stride_row
    run_lse = tl.full([], -float("inf"), ACC_DTYPE)
    saw_nan = tl.zeros([], tl.int32)
    saw_pos_inf = tl.zeros([], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        x = to_dtype(tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")), ACC_DTYPE)
        is_nan = x != x
        is_pos_inf = x == float("inf")
        saw_nan = tl.maximum(saw_nan, tl.max(is_nan.to(tl.int32), axis=0))
        saw_pos_inf = tl.maximum(saw_pos_inf, tl.max(is_pos_inf.to(tl.int32), axis=0))
        x = tl.where(is_nan | is_pos_inf, -float("inf"), x)
        tile_max = tl.max(x, axis=0)
        tile_shift = tl.where(tile_max == -float("inf"), 0.0, tile_max)
        tile_lse = tile_max + tl_libdevice.log(tl.sum(tl.exp(x - tile_shift), axis=0))
        high = tl.maximum(run_lse, tile_lse)
        low = tl.minimum(run_lse, tile_lse)
        merged = high + log1p(expm1(low - high) + 1.0)
        run_lse = tl.where(low == -float("inf"), high, merged)
    result = tl.where(saw_pos_inf > 0, float("inf"), run_lse)
    result = tl.where(saw_nan > 0, float("nan"), result)
    if CAST_OUTPUT:
        tl.store(out_ptr + row, to_dtype(result, out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + row, result)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor, in the input's dtype."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 2048)
    half = x.dtype in (torch.float16, torch.bfloat16)
    acc_dtype = tl.float64 if x.dtype == torch.float64 else tl.float32
    _tiled_logaddexp_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK_N=block_n, ACC_DTYPE=acc_dtype,
                                     CAST_OUTPUT=half, num_warps=4 if block_n <= 1024 else 8)
    return out
