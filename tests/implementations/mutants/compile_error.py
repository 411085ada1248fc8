"""Planted compile error: the kernel calls a function triton.language does not have.

Compiled for a GPU this raises triton.compiler.errors.CompilationError at the first launch; in
Triton's interpreter, the AttributeError arrives wrapped in an InterpreterError. Expected status:
CompileError.
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl


@triton.jit
def _lse_kernel(x_ptr, out_ptr, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    tl.store(out_ptr + row, tl.logsumexp_that_does_not_exist(x))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.full((rows,), -float("inf"), dtype=torch.float32, device=x.device)
    if rows and cols:
        _lse_kernel[(rows,)](x.contiguous(), out, rows, cols, BLOCK_N=triton.next_power_of_2(cols))
    return out
