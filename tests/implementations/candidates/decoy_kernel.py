"""Cheat: defines a Triton kernel it never uses and returns torch.logsumexp. It passes every
check; the static scan flags the library call and the kernel that nothing launches."""

import torch
import triton
import triton.language as tl


@triton.jit
def _unused_kernel(x_ptr, out_ptr, N, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + cols, mask=cols < N, other=-float("inf"))
    tl.store(out_ptr, tl.max(x, axis=0))


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
