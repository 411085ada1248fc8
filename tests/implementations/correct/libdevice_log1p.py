"""Whole row in one tile, the log taken as libdevice.log1p(s - 1): how merge kernels write their log.

    out[i] = m_i + log1p(s_i - 1),    s_i = sum_j exp(x[i, j] - m_i) >= 1

Kernels that merge partial results or fuse a cross-entropy write logaddexp as ``m + log1p(...)``
through CUDA's libdevice (``from triton.language.extra import libdevice``), and reuse it for the
final log. It is exact here: the max's own term makes s >= 1, so for s in [1, 2] the subtraction
s - 1 is exact (Sterbenz) and log1p(s - 1) is log(s) to log1p's accuracy; beyond 2 the subtraction
rounds less than the log's own error. libdevice has float32 and float64 versions only, so the row
is widened to float32 (float64 stays float64) before any arithmetic.

One program per row, BLOCK = next_power_of_2(N) (the tutorial's tile, uncapped up to Triton's
largest block, 2**20: declared in contracts.json). Edge cases: the lanes past N read -inf; the max
ignores NaN (a flag keeps it); the shift is the max when finite and 0 otherwise (an all -inf row
sums to 0, a +inf row to +inf); the final select gives NaN, then the infinite max, else m + log1p.
Offsets are 64-bit. Output: float32; float64 for float64.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

MAX_BLOCK = 2**20  # Triton's largest tensor


@triton.jit
def _log1p_row_kernel(x_ptr, out_ptr, N, stride_row, stride_col, BLOCK: tl.constexpr):
    acc_dtype = out_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK).to(tl.int64)
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < N, other=-float("inf")).to(acc_dtype)
    is_nan = x != x
    saw_nan = tl.max(is_nan.to(tl.int32), axis=0) > 0
    row_max = tl.max(tl.where(is_nan, -float("inf"), x), axis=0)
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    shift = tl.where(infinite, 0.0, row_max)
    row_sum = tl.sum(tl.exp(x - shift), axis=0)
    result = tl.where(infinite, row_max, row_max + libdevice.log1p(row_sum - 1.0))
    tl.store(out_ptr + row, tl.where(saw_nan, float("nan"), result))


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    rows, cols = x.shape
    if cols > MAX_BLOCK:
        raise ValueError(f"N={cols}: rows of at most {MAX_BLOCK} columns fit one tile.")
    out = torch.empty(rows, dtype=torch.float64 if x.dtype == torch.float64 else torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-float("inf"))
    block = triton.next_power_of_2(cols)
    num_warps = 16 if block >= 4096 else 8 if block >= 2048 else 4
    _log1p_row_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=block, num_warps=num_warps)
    return out
