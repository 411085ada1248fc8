"""Buggy Triton kernel: sums bfloat16 in bfloat16 (``tl.sum(..., dtype=x.dtype)``), losing the sum's digits.

Right for float32 and float64 input, which it sums in their own type; wrong for 16-bit input.

    s_i = sum_j exp(x[i, j] - m_i)   accumulated in bfloat16 (8 significant bits): wrong by percents

The max and the exponentials are right; the sum is asked for in the input's type, so every partial
sum is rounded to bfloat16, and once it passes 256 each term below 1 is rounded away or doubled:
log(s) is off by far more than the result's rounding. On an H200 it fails ``agreement``; on the CPU
it must fail the same way (Triton's interpreter returned the bfloat16 sum as a one-element block,
and ``(m == inf) & (s == s)`` raised TypeError there: an ERROR blamed on the emulator).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _bf16_sum_kernel(x_ptr, out_ptr, N, stride_row, stride_col, BLOCK: tl.constexpr, ACC_DTYPE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK).to(tl.int64)
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < N, other=-float("inf"))
    m = tl.max(x, axis=0)
    shift = tl.where((m == float("inf")) | (m == -float("inf")), 0.0, m)
    e = tl.exp(x.to(ACC_DTYPE) - shift).to(x.dtype)
    s = tl.sum(e, axis=0, dtype=x.dtype)  # the bug: a 16-bit input's sum is 16-bit; accumulate in ACC_DTYPE
    special = ((m == float("inf")) & (s == s)) | (m == -float("inf"))
    result = tl.where(special, m.to(ACC_DTYPE), m.to(ACC_DTYPE) + tl.log(s.to(ACC_DTYPE)))
    tl.store(out_ptr + row, tl.where(tl.max((x != x).to(tl.int32), axis=0) > 0, float("nan"), result))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float64 if x.dtype == torch.float64 else torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-float("inf"))
    acc = tl.float64 if x.dtype == torch.float64 else tl.float32
    _bf16_sum_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK=triton.next_power_of_2(cols), ACC_DTYPE=acc)
    return out
