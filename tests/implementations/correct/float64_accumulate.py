"""float64 accumulation for every input dtype: two passes per block of rows, exp and log in float64.

    m_i = max_j x[i, j];  out[i] = m_i + log(sum_j exp(x[i, j] - m_i)),  all in float64

The "compute in double, round once" approach of reference implementations that trade speed for
accuracy (a float64 oracle in a kernel): every supported input converts to float64 exactly, so
the only rounding errors are float64's (about 1e-16 relative) and the final rounding to the
output dtype. On a GPU, float64 exp costs far more than float32 ex2 (H100/H200 still run it at
memory speed for this 0.5 FLOP/byte kernel, consumer GPUs would not). BLOCK_M rows per program;
pass 1 reads the rows for their max, pass 2 reads them again for the shifted sum.

Edge cases by counting: pass 1 counts NaN and +inf entries per row and takes the max over the
rest (finite values and -inf). Pass 2 shifts by that max where it is finite and by 0 where the
row is all -inf (every term exp(-inf) = 0); rows holding NaN or +inf get their answer from the
counts, so their sum is never used.

Output: float64 for float64 input; float32 for float16, bfloat16 and float32 (the float64 result
rounded once at the store). Row and column offsets are always 64-bit.
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _lse_f64_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    row_ptrs = x_ptr + rows[:, None] * stride_row
    lanes = tl.arange(0, BLOCK_N).to(tl.int64)

    row_max = tl.full([BLOCK_M], -float("inf"), tl.float64)
    nan_count = tl.zeros([BLOCK_M], tl.int32)
    pos_inf_count = tl.zeros([BLOCK_M], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + lanes
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(tl.float64)
        is_nan = x != x
        is_pos_inf = x == float("inf")
        nan_count += tl.sum(is_nan.to(tl.int32), axis=1)
        pos_inf_count += tl.sum(is_pos_inf.to(tl.int32), axis=1)
        row_max = tl.maximum(row_max, tl.max(tl.where(is_nan | is_pos_inf, -float("inf"), x), axis=1))

    shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    row_sum = tl.zeros([BLOCK_M], tl.float64)
    for start in range(0, N, BLOCK_N):
        cols = start + lanes
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=mask, other=-float("inf")).to(tl.float64)
        # NaN and +inf entries would poison the sum; their rows are decided by the counts.
        x = tl.where((x != x) | (x == float("inf")), -float("inf"), x)
        row_sum += tl.sum(tl.exp(x - shift[:, None]), axis=1)

    result = tl.where(row_max == -float("inf"), -float("inf"), row_max + tl.log(row_sum))
    result = tl.where(pos_inf_count > 0, float("inf"), result)
    result = tl.where(nan_count > 0, float("nan"), result)
    tl.store(out_ptr + rows, result.to(out_ptr.dtype.element_ty), mask=row_mask)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp in float64; float64 output for float64 input, float32 otherwise."""
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
    block_m = min(triton.next_power_of_2(rows), max(1, 2048 // block_n))
    _lse_f64_kernel[(triton.cdiv(rows, block_m),)](
        x, out, rows, cols, x.stride(0), x.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8)
    return out
