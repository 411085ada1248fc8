"""A small, correct LSE kernel for the tests of ``lse-fuzz mutate``: every operator has a site here.

Two programs' worth of rows per program (``ROWS``; the grid is a ``cdiv``), two passes over
``BLOCK``-wide tiles (the row max, then the sum of exp(x - max)), 64-bit row and column offsets,
any strides, float32 accumulation, -inf rows by a ``tl.where`` guard. Contract: finite values (-inf included),
float32/float16/bfloat16 input, float32 output. The ``WIDE`` branch (rows past 4096 columns) is
never reached by the tests' small inputs: the mutants there are NoCoverage.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

ROWS = 2
BLOCK = 16


@triton.jit
def _tiny_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                 ROWS: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    for r in tl.static_range(ROWS):
        row = tl.program_id(0) * ROWS + r
        if row < M:
            row_ptr = x_ptr + row.to(tl.int64) * stride_row
            row_max = tl.full([], -float("inf"), tl.float32)
            for start in range(0, N, BLOCK):
                cols = (start + tl.arange(0, BLOCK)).to(tl.int64)
                x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(tl.float32)
                row_max = tl.maximum(row_max, tl.max(x, axis=0))
            # An all -inf row has no finite shift: shift by 0 (exp(-inf) = 0 and log(0) = -inf).
            shift = tl.where(row_max == -float("inf"), 0.0, row_max)
            row_sum = tl.zeros([], tl.float32)
            for start in range(0, N, BLOCK):
                cols = (start + tl.arange(0, BLOCK)).to(tl.int64)
                x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(tl.float32)
                if WIDE:
                    row_sum += tl.sum(tl.exp(x - shift), axis=0)
                else:
                    row_sum += tl.sum(tl.exp(x - shift), axis=0)
            tl.store(out_ptr + row, row_max + tl.log(row_sum))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0:
        return out
    grid = (triton.cdiv(rows, ROWS),)
    _tiny_kernel[grid](x, out, rows, cols, x.stride(0), x.stride(1), ROWS=ROWS, BLOCK=BLOCK, WIDE=cols > 4096)
    return out
