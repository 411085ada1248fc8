"""Broken (memory_bounds) in one config only: an autotuned kernel whose wide config (BLOCK 64) lets
one lane past the end of each row through its tail mask. The narrow config (BLOCK 32) is clean,
and it is the one Triton's interpreter runs when nothing pins a config: only a probe run with
each config sees the stray read."""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["N"])
@triton.jit
def _tuned_reads_past_kernel(x_ptr, out_ptr, N, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    end = N + 1 if BLOCK == 64 else N  # the bug: one lane too many in the wide config
    row_max = -float("inf")
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + cols, mask=cols < end, other=-float("inf"))
        row_max = tl.maximum(row_max, tl.max(x.to(tl.float32), axis=0))
    shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    total = 0.0
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + cols, mask=cols < N, other=-float("inf"))
        total += tl.sum(tl.exp(x.to(tl.float32) - shift), axis=0)
    tl.store(out_ptr + row, shift + tl.log(total))


def lse(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=torch.float32, device=x.device)
    x = x if x.stride(1) == 1 else x.contiguous()
    out = torch.empty(rows, dtype=torch.float32, device=x.device)
    _tuned_reads_past_kernel[(rows,)](x, out, cols, x.stride(0))
    return out
