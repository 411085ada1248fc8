"""The README's example of `lse-fuzz check`: a whole-row Triton kernel (BLOCK_N the next power of two
of N, as in Triton's softmax tutorial) with the classic slip: masked lanes are loaded as 0.0, not
-inf, so each one adds exp(0 - m) to the row's sum whenever N is not a power of two."""

import torch
import triton
import triton.language as tl


@triton.jit
def _lse_kernel(x_ptr, out_ptr, N, stride_row, stride_col, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N).to(tl.int64)
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < N, other=0.0).to(tl.float32)
    row_max = tl.max(x, axis=0)
    total = tl.sum(tl.exp(x - row_max), axis=0)
    tl.store(out_ptr + row, row_max + tl.log(total))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    if rows == 0 or cols == 0:
        return out.fill_(-float("inf"))
    _lse_kernel[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(cols))
    return out
