"""A Triton kernel that reduces the middle dim of a 3-D (B, N, C) tensor, any strides: lse(x) -> (B, C).

    out[b, c] = m + log(sum_n exp(x[b, n, c] - m)),   m = max_n x[b, n, c]

The layout of attention-style statistics (reduce the sequence dim, keep batch and channels): one
program per (b, c) pair walks the N entries in BLOCK_N-wide tiles with the online max and sum of
``online_single_pass.py`` (Milakov and Gimelshein 2018), every address computed from all three
strides (a batch dim of size 1 or a transposed input changes nothing). The dim and keepdim are
fixed, so it is called as ``lse(x)`` and declares ``--ndim 3 --dim 1`` (contracts.json).
NaN wins, then +inf, then an all -inf row gives -inf; an empty row gives -inf. Output float32
(float64 for float64). Offsets are 64-bit: the fuzzer's N-D inputs are small, real ones are not.
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
def _lse_middle_kernel(x_ptr, out_ptr, N, C, stride_b, stride_n, stride_c, BLOCK_N: tl.constexpr):
    acc_dtype = out_ptr.dtype.element_ty
    pid = tl.program_id(0).to(tl.int64)
    b = pid // C
    c = pid % C
    base = x_ptr + b * stride_b + c * stride_c
    run_max = tl.full([], -float("inf"), acc_dtype)
    run_sum = tl.zeros([], acc_dtype)
    saw_nan = tl.zeros([], tl.int32)
    saw_pos_inf = tl.zeros([], tl.int32)
    for start in range(0, N, BLOCK_N):
        n = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        x = tl.load(base + n * stride_n, mask=n < N, other=-float("inf")).to(acc_dtype)
        is_nan = x != x
        is_pos_inf = x == float("inf")
        saw_nan = tl.maximum(saw_nan, tl.max(is_nan.to(tl.int32), axis=0))
        saw_pos_inf = tl.maximum(saw_pos_inf, tl.max(is_pos_inf.to(tl.int32), axis=0))
        x = tl.where(is_nan | is_pos_inf, -float("inf"), x)
        new_max = tl.maximum(run_max, tl.max(x, axis=0))
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)  # no finite shift while all -inf
        run_sum = run_sum * tl.exp(run_max - shift) + tl.sum(tl.exp(x - shift), axis=0)
        run_max = new_max
    result = tl.where(run_max == -float("inf"), -float("inf"), run_max + tl.log(run_sum))
    result = tl.where(saw_pos_inf > 0, float("inf"), result)
    result = tl.where(saw_nan > 0, float("nan"), result)
    tl.store(out_ptr + pid, result)


def lse(x: torch.Tensor) -> torch.Tensor:
    """log-sum-exp over dim 1 of a 3-D float tensor (B, N, C); a new contiguous (B, C) result."""
    if x.dim() != 3:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 3-D (B, N, C) tensor.")
    batch, cols, channels = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.empty((batch, channels), dtype=out_dtype, device=x.device)
    if out.numel() == 0:
        return out
    if cols == 0:
        return out.fill_(-math.inf)
    block_n = min(triton.next_power_of_2(cols), 1024)
    _lse_middle_kernel[(batch * channels,)](x, out, cols, channels, x.stride(0), x.stride(1), x.stride(2),
                                            BLOCK_N=block_n)
    return out
