"""Triton tutorial 02-fused-softmax style with no cap: one program per row, the whole row in one
register tile, BLOCK = next_power_of_2(N) for every N (up to Triton's largest block, 2**20).

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i))

The kernel people write first, and the one that made the fuzzer cry wolf on a GPU: a row of
563,416 columns compiles a 2**20-lane block, which takes a minute or more, and that compile used
to be timed as a hang. It is correct: one masked load with -inf in the lanes past N (they lose the
max and add exp(-inf) = 0), the max taken without NaN (a separate flag keeps NaN), the shift is
the max when finite and 0 otherwise (an all -inf row sums to 0, a +inf row to +inf), and the
final select gives NaN, then the infinite max itself, else max + log(sum). num_warps as in the
tutorial (8 from 2048 lanes, 16 from 4096).

Offsets are 64-bit (row index and columns widened before the multiply). Accumulates in float32,
float64 for float64. Output: float32; float64 for float64. Declares N <= 2**20 (contracts.json).
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when @triton.jit decorates, below

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

MAX_BLOCK = 2**20  # Triton's largest tensor


@triton.jit
def _row_kernel(x_ptr, out_ptr, N, stride_row, stride_col, BLOCK: tl.constexpr, ACC_DTYPE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK).to(tl.int64)
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < N, other=-float("inf")).to(ACC_DTYPE)
    is_nan = x != x
    saw_nan = tl.max(is_nan.to(tl.int32), axis=0) > 0
    row_max = tl.max(tl.where(is_nan, -float("inf"), x), axis=0)
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    shift = tl.where(infinite, 0.0, row_max)
    row_sum = tl.sum(tl.exp(x - shift), axis=0)
    result = tl.where(infinite, row_max, row_max + tl.log(row_sum))
    tl.store(out_ptr + row, tl.where(saw_nan, float("nan"), result))


def lse(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D tensor, got shape {tuple(x.shape)}")
    M, N = x.shape
    if N > MAX_BLOCK:
        raise ValueError(f"rows of at most {MAX_BLOCK} columns fit one tile, got N={N}")
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.empty(M, dtype=out_dtype, device=x.device)
    if M == 0:
        return out
    if N == 0:
        return out.fill_(-float("inf"))
    block = triton.next_power_of_2(N)
    num_warps = 16 if block >= 4096 else 8 if block >= 2048 else 4
    acc = tl.float64 if x.dtype == torch.float64 else tl.float32
    _row_kernel[(M,)](x, out, N, x.stride(0), x.stride(1), BLOCK=block, ACC_DTYPE=acc, num_warps=num_warps)
    return out
