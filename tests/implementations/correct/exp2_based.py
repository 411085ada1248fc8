"""exp2/log2 form, float32 everywhere: several rows per program, online over BLOCK_N tiles.

    out[i] = m_i + ln(2) * log2(sum_j 2^((x[i, j] - m_i) * log2(e)))

The form fast kernels use because the GPU's ex2/lg2 units compute base-2 functions directly
(flash-attention folds log2(e) into its softmax scale; Triton's own tl.exp lowers to one ex2 plus a
multiply). Two places need care: the difference x - m is taken *before* the multiply by log2(e)
(x * log2(e) alone overflows float32 for |x| above 2.36e38, where x - m still does not), and the
max is added back in natural units (m * log2(e) would overflow the same way).

BLOCK_M rows per program, each with a running max and a rescaled running sum ([BLOCK_M] vectors),
masks on rows and columns. Edge cases: the max ignores NaN explicitly (tl.max's NaN handling
differs between the interpreter and compiled code) while the sum does not, so a NaN entry turns
the row's sum into NaN and stays there; +inf shows up as a +inf max; the shift is the max where
finite and 0 otherwise; the rescale factor is 1 when the max did not change (this keeps
-inf - (-inf) and inf - inf out).

Output: float32 for every input dtype; the input is converted to float32 in the kernel, also for
float64 (so float64 values past float32's range arrive as +-inf). Index math is 64-bit when the host
sees an offset reach 2**31 - 1.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
LN2: tl.constexpr = tl.constexpr(0.6931471805599453)
INT32_LIMIT = 2**31 - 1


@triton.jit
def _lse_exp2_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    if INT64:
        rows = rows.to(tl.int64)
    row_ptrs = x_ptr + rows[:, None] * stride_row
    run_max = tl.full([BLOCK_M], -float("inf"), tl.float32)
    run_sum = tl.zeros([BLOCK_M], tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(tl.float32)
        tile_max = tl.max(tl.where(x == x, x, -float("inf")), axis=1)
        new_max = tl.maximum(run_max, tile_max)
        shift = tl.where((new_max == float("inf")) | (new_max == -float("inf")), 0.0, new_max)
        rescale = tl.where(run_max == new_max, 1.0, tl.exp2((run_max - new_max) * LOG2E))
        terms = tl.exp2((x - shift[:, None]) * LOG2E)
        run_sum = run_sum * rescale + tl.sum(terms, axis=1)
        run_max = new_max
    infinite = (run_max == float("inf")) | (run_max == -float("inf"))
    result = tl.where(infinite, run_max, run_max + tl.log2(run_sum) * LN2)
    result = tl.where(run_sum != run_sum, float("nan"), result)
    tl.store(out_ptr + rows, result, mask=row_mask)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output for every input dtype."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 2048)
    block_m = min(triton.next_power_of_2(rows), max(1, 4096 // block_n))
    int64 = (rows - 1) * abs(x.stride(0)) + (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    _lse_exp2_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, INT64=int64, num_warps=4 if block_m * block_n <= 1024 else 8)
    return out
