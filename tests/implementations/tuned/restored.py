"""Correct, with ``reset_to_zero`` and ``restore_value``: the autotuner zeroes the output and
snapshots the input around each benchmark run (Triton's default pre/post hooks), which a launch
that is not benchmarked never does."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._rows import launch, rows_lse, tile_configs


@triton.autotune(configs=tile_configs(), key=["N"], reset_to_zero=["out_ptr"], restore_value=["x_ptr"])
@triton.jit
def _lse_kernel(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows_lse(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col, N, BLOCK_M, BLOCK_N, False, False)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(_lse_kernel, x)
