"""Correct, with one line of inline GPU assembly: the CPU cannot run it, a GPU can.

The two passes of ``triton_two_pass.py`` (max, then the shifted sum, in float32), and the result
passed through ``tl.inline_asm_elementwise`` running PTX's ``mov.b32``: a copy, so on a GPU the
kernel is as right as without it. Triton's interpreter has no meaning for GPU assembly, so on the
CPU the run is ``unsupported`` (fuzz.interpreter.unsupported), never an error of the kernel.

A standalone candidate: it does not import the project.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i)),  m_i = max_j x[i, j]
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _inline_asm_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    row_ptrs = x_ptr + rows.to(tl.int64)[:, None] * stride_row
    row_max = tl.full([BLOCK_M], -float("inf"), tl.float32)
    nan_count = tl.zeros([BLOCK_M], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(tl.float32)
        nan_count += tl.sum((x != x).to(tl.int32), axis=1)
        row_max = tl.maximum(row_max, tl.max(tl.where(x == x, x, -float("inf")), axis=1))
    finite = (row_max != float("inf")) & (row_max != -float("inf"))
    shift = tl.where(finite, row_max, 0.0)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(tl.float32)
        row_sum += tl.sum(tl.exp(x - shift[:, None]), axis=1)
    result = tl.where(finite, row_max + tl.log(row_sum), row_max)
    result = tl.where(nan_count > 0, float("nan"), result)
    # A copy of each lane's 32 bits ("=r,r": one 32-bit register out, one in).
    result = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [result], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + rows, result, mask=row_mask)


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=torch.float32, device=x.device)
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    block_n = min(triton.next_power_of_2(cols), 4096)
    block_m = min(triton.next_power_of_2(rows), max(1, 16384 // block_n))
    _inline_asm_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1), BLOCK_M=block_m, BLOCK_N=block_n)
    return out
