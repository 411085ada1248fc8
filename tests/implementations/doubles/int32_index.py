"""Broken: the two-pass kernel with 32-bit index math. Offsets past 2**31 elements wrap, and
the kernel reads (or, on a CPU, crashes on) memory far from the input: only huge-offset layouts
expose it, and only in a process of its own.

``lse`` computes every offset in int32. ``lse_int32_columns`` makes the common half-fix: 64-bit
row offsets (``row.to(tl.int64) * stride_row``), column offsets still ``cols * stride_col`` in
int32. A huge row stride passes it; only the ``huge_column_stride`` layout, whose last column lies
past 2**31 elements, exposes it.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i)),  m_i = max_j x[i, j]

NaN is counted in the first pass rather than propagated through tl.maximum, whose NaN handling
differs between the interpreter (numpy) and compiled code.
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl


@triton.jit
def _int32_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64_ROWS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    if INT64_ROWS:
        row_ptrs = x_ptr + rows.to(tl.int64)[:, None] * stride_row
    else:
        row_ptrs = x_ptr + rows[:, None] * stride_row
    dtype = out_ptr.dtype.element_ty
    row_max = tl.full([BLOCK_M], -float("inf"), dtype)
    nan_count = tl.zeros([BLOCK_M], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N))
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(dtype)
        nan_count += tl.sum((x != x).to(tl.int32), axis=1)
        row_max = tl.maximum(row_max, tl.max(tl.where(x == x, x, -float("inf")), axis=1))
    finite = (row_max != float("inf")) & (row_max != -float("inf"))
    shift = tl.where(finite, row_max, 0.0)
    row_sum = tl.zeros([BLOCK_M], dtype)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N))
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(dtype)
        row_sum += tl.sum(tl.exp(x - shift[:, None]), axis=1)
    result = tl.where(finite, row_max + tl.log(row_sum), row_max)
    result = tl.where(nan_count > 0, float("nan"), result)
    tl.store(out_ptr + rows, result, mask=row_mask)


def lse(x: torch.Tensor, *, int64_rows: bool = False) -> torch.Tensor:
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    block_n = min(triton.next_power_of_2(cols), 4096)
    block_m = min(triton.next_power_of_2(rows), max(1, 16384 // block_n))
    _int32_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, INT64_ROWS=int64_rows)
    return out


def lse_int32_columns(x: torch.Tensor) -> torch.Tensor:
    return lse(x, int64_rows=True)
