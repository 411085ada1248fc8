"""Launch parameters from @triton.heuristics: BLOCK_N, BLOCK_M, EVEN_N and INT64 derived from the
arguments; full tiles load with no mask at all when N is a multiple of BLOCK_N.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i))

The flash-attention (v2 Triton) and xformers habit of computing constexprs such as EVEN_N from the
runtime sizes with @triton.heuristics, so the compiler drops the masks where they cannot matter.
Heuristics run in order and each sees the ones before it, so EVEN_N is computed from BLOCK_N.
Rows past M are clamped to row M - 1 (re-read, never stored) instead of masked, so an EVEN_N
launch issues plain unmasked loads; otherwise only the column mask is applied.

Edge cases, "NaN counts as +inf in the max": the max is taken with NaN replaced by +inf, so a row
holding NaN or +inf has max +inf. Such a row's shift is 0 and its sum is sum exp(x), which is NaN
when a NaN is present and +inf otherwise (exp(+inf) = inf, exp(-inf) = 0, never inf - inf): the
sum tells the two apart at the end. An all -inf row has max -inf and result -inf. Rows with a
finite max hold only finite values and -inf.

Output: float32 for float16, bfloat16, float32 (accumulated in float32); float64 for float64.
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


def _block_n(args):
    return min(triton.next_power_of_2(args["N"]), 1024)


def _block_m(args):
    return min(triton.next_power_of_2(args["M"]), max(1, 2048 // args["BLOCK_N"]))


def _needs_int64(args):
    return (args["M"] - 1) * abs(args["stride_row"]) + (args["N"] - 1) * abs(args["stride_col"]) >= INT32_LIMIT


@triton.heuristics({
    "BLOCK_N": _block_n,
    "BLOCK_M": _block_m,
    "EVEN_N": lambda args: args["N"] % args["BLOCK_N"] == 0,
    "INT64": _needs_int64,
    "num_warps": lambda args: 8 if args["BLOCK_M"] * args["BLOCK_N"] >= 2048 else 4,
})
@triton.jit
def _lse_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, INT64: tl.constexpr):
    acc_dtype = out_ptr.dtype.element_ty
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    read_rows = tl.minimum(rows, M - 1)  # rows past M re-read the last row: no row mask needed
    lanes = tl.arange(0, BLOCK_N)
    if INT64:
        read_rows = read_rows.to(tl.int64)
        lanes = lanes.to(tl.int64)
    row_ptrs = x_ptr + read_rows[:, None] * stride_row
    run_max = tl.full([BLOCK_M], -float("inf"), acc_dtype)
    run_sum = tl.zeros([BLOCK_M], acc_dtype)
    for start in range(0, N, BLOCK_N):
        cols = start + lanes
        ptrs = row_ptrs + cols[None, :] * stride_col
        if EVEN_N:
            x = tl.load(ptrs)
        else:
            x = tl.load(ptrs, mask=(cols < N)[None, :], other=-float("inf"))
        x = x.to(acc_dtype)
        new_max = tl.maximum(run_max, tl.max(tl.where(x != x, float("inf"), x), axis=1))
        shift = tl.where((new_max == float("inf")) | (new_max == -float("inf")), 0.0, new_max)
        # Old sum rescaled by exp(old - new): 1 when unchanged (also -inf -> -inf and +inf -> +inf).
        rescale = tl.where(run_max == new_max, 1.0, tl.exp(run_max - new_max))
        run_sum = run_sum * rescale + tl.sum(tl.exp(x - shift[:, None]), axis=1)
        run_max = new_max
    result = run_max + tl.log(run_sum)
    result = tl.where(run_max == -float("inf"), -float("inf"), result)
    result = tl.where(run_max == float("inf"), tl.where(run_sum != run_sum, float("nan"), float("inf")), result)
    tl.store(out_ptr + rows, result, mask=rows < M)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
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
    _lse_kernel[lambda meta: (triton.cdiv(rows, meta["BLOCK_M"]),)](x, out, rows, cols, x.stride(0), x.stride(1))
    return out
