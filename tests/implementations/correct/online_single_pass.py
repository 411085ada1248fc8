"""Online softmax normalizer, Liger-Kernel cross-entropy style: one program per row, one pass.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i)),   m_i = max_j x[i, j]

Each program walks its row in BLOCK_N-wide tiles and keeps two *scalars*: the running max ``run_max``
and the running sum ``run_sum`` of exp(x - run_max). When a tile raises the max the old sum is
rescaled by exp(old_max - new_max) (Milakov and Gimelshein 2018, "Online normalizer calculation
for softmax"), the way Liger-Kernel's cross-entropy forward computes its normalizer ``d`` with
``m`` and ``tl.exp``. Every tile is masked (the tail lanes read -inf).

Edge cases, "clean and flag": each tile records whether it holds a NaN or a +inf, then replaces
those entries with -inf, so the arithmetic only ever sees finite values and -inf. The shift is the
running max when finite and 0 for a row that is -inf so far, which keeps -inf - (-inf) out of
every exp. The flags decide the result at the end: NaN wins, then +inf, then an all -inf row.

Output: float32 (accumulated in float32) for float16, bfloat16 and float32; float64 (accumulated
in float64) for float64. Row offsets are always 64-bit (one scalar per program); column offsets
are 64-bit when the host sees (N - 1) * |stride_col| reach 2**31 - 1.
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


@triton.jit
def _lse_row_kernel(x_ptr, out_ptr, N, stride_row, stride_col,
                    BLOCK_N: tl.constexpr, WIDE_COLS: tl.constexpr):
    acc_dtype = out_ptr.dtype.element_ty
    row = tl.program_id(0).to(tl.int64)  # row * stride_row passes 2**31 on huge views
    row_ptr = x_ptr + row * stride_row
    run_max = tl.full([], -float("inf"), acc_dtype)
    run_sum = tl.zeros([], acc_dtype)
    saw_nan = tl.zeros([], tl.int32)
    saw_pos_inf = tl.zeros([], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        if WIDE_COLS:
            cols = cols.to(tl.int64)
        # Tail lanes read -inf: they lose the max and add exp(-inf) = 0.
        x = tl.load(row_ptr + cols * stride_col, mask=cols < N, other=-float("inf")).to(acc_dtype)
        is_nan = x != x
        is_pos_inf = x == float("inf")
        saw_nan = tl.maximum(saw_nan, tl.max(is_nan.to(tl.int32), axis=0))
        saw_pos_inf = tl.maximum(saw_pos_inf, tl.max(is_pos_inf.to(tl.int32), axis=0))
        x = tl.where(is_nan | is_pos_inf, -float("inf"), x)  # finite values and -inf only
        new_max = tl.maximum(run_max, tl.max(x, axis=0))
        # No finite shift exists while the row is all -inf: use 0 (every term is exp(-inf) = 0).
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - shift) + tl.sum(tl.exp(x - shift), axis=0)
        run_max = new_max
    result = tl.where(run_max == -float("inf"), -float("inf"), run_max + tl.log(run_sum))
    result = tl.where(saw_pos_inf > 0, float("inf"), result)
    result = tl.where(saw_nan > 0, float("nan"), result)
    tl.store(out_ptr + row, result)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 4096)
    wide_cols = (cols - 1) * abs(x.stride(1)) >= INT32_LIMIT
    _lse_row_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1),
                             BLOCK_N=block_n, WIDE_COLS=wide_cols, num_warps=4 if block_n <= 1024 else 8)
    return out
