"""Buggy Triton kernel: forgets to subtract the row max, so exp(x) overflows for x > 88 (float32).

    out[i] = log(sum_j exp(x[i, j]))      # should be m_i + log(sum_j exp(x[i, j] - m_i))
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _no_max_kernel(x_ptr, out_ptr, M, N, stride_row, stride_col, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    total = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < N, other=-float("inf"))
        total += tl.exp(x.to(tl.float32))
    tl.store(out_ptr + row, tl.log(tl.sum(total, axis=0)))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0:
        return out
    if cols == 0:
        return out.fill_(-float("inf"))
    block = min(triton.next_power_of_2(cols), 4096)
    _no_max_kernel[(rows,)](x, out, rows, cols, x.stride(0), x.stride(1), BLOCK_N=block)
    return out
