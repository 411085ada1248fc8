"""Split-K: one program per tile writes the tile's LSE, a second kernel merges them with tanh.

    p_t = m_t + log(sum_{j in tile t} exp(x[i, j] - m_t))
    lse <- hi + softplus(lo - hi),   softplus(-d) = log(1 + e^-d) = -log1p((tanh(d / 2) - 1) / 2)

The flash-decoding shape: a row's tiles are reduced by programs of their own into partial LSEs
(a scratch tensor of shape (M, S)), and a combine kernel folds the S partials. The merge weight is
a sigmoid, and sigmoid(d) = (1 + tanh(d / 2)) / 2 is how kernels that avoid exp overflow write it;
its log is taken with log1p, whose argument (tanh(d / 2) - 1) / 2 lies in [-1/2, 0]: no constant
such as ln 2 is rounded into the result, and the scaling by 1/2 is exact. libdevice is reached
through a module alias (``ld``) and a function bound to a module-level name (``tanh = ld.tanh``).

Edge cases: a tile of -inf only has partial -inf and leaves the running LSE alone (no -inf - -inf);
a tile with +inf has partial +inf and the merge keeps it (no inf - inf); a tile with NaN has partial
NaN, which a flag carries to the result (tl.maximum would drop it). libdevice has float32 and
float64 versions only: 16-bit input is widened to float32. Offsets are 64-bit. Output: float32;
float64 for float64.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice as ld  # noqa: E402

tanh = ld.tanh


@triton.jit
def _tile_lse_kernel(x_ptr, partial_ptr, N, stride_row, stride_col, num_tiles, BLOCK: tl.constexpr):
    acc_dtype = partial_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    tile = tl.program_id(1).to(tl.int64)
    cols = tile * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < N, other=-float("inf")).to(acc_dtype)
    is_nan = x != x
    tile_max = tl.max(tl.where(is_nan, -float("inf"), x), axis=0)
    infinite = (tile_max == float("inf")) | (tile_max == -float("inf"))
    shift = tl.where(infinite, 0.0, tile_max)
    partial = tl.where(infinite, tile_max, tile_max + tl.log(tl.sum(tl.exp(x - shift), axis=0)))
    saw_nan = tl.max(is_nan.to(tl.int32), axis=0) > 0
    tl.store(partial_ptr + row * num_tiles + tile, tl.where(saw_nan, float("nan"), partial))


@triton.jit
def _tanh_merge_kernel(partial_ptr, out_ptr, num_tiles):
    row = tl.program_id(0).to(tl.int64)
    run = tl.load(partial_ptr + row * num_tiles)
    saw_nan = run != run
    for tile in range(1, num_tiles):
        partial = tl.load(partial_ptr + row * num_tiles + tile)
        saw_nan = saw_nan | (partial != partial)
        high = tl.maximum(run, partial)
        low = tl.minimum(run, partial)
        gap = high - low
        softplus_of_minus_gap = -ld.log1p((tanh(0.5 * gap) - 1.0) * 0.5)
        merged = high + softplus_of_minus_gap
        run = tl.where((low == -float("inf")) | (high == float("inf")), high, merged)
    tl.store(out_ptr + row, tl.where(saw_nan, float("nan"), run))


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block = min(triton.next_power_of_2(cols), 4096)
    num_tiles = triton.cdiv(cols, block)
    partials = torch.empty((rows, num_tiles), dtype=out_dtype, device=x.device)
    _tile_lse_kernel[(rows, num_tiles)](x, partials, cols, x.stride(0), x.stride(1), num_tiles, BLOCK=block,
                                        num_warps=8 if block >= 2048 else 4)
    _tanh_merge_kernel[(rows,)](partials, out, num_tiles, num_warps=1)
    return out
