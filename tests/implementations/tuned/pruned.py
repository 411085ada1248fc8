"""Correct, with ``prune_configs_by``: ``early_config_prune`` drops tiles wider than the row needs,
then a performance model keeps the ``top_k = 2`` configs with the fewest tiles per row.

For N = 40 the pruner keeps BLOCK_N 32 and 64 (64 covers the row; 128 and 256 are pruned) and the
model keeps both; for N = 1000 all four survive the pruner and the model keeps 256 and 128. So the
real kernel never runs BLOCK_N = 32 on a row of 1000, and neither may a pinned one.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._rows import launch, rows_lse, tile_configs


def _fits_row(configs, named_args, **kwargs):
    widest = max(32, triton.next_power_of_2(named_args["N"]))
    return [config for config in configs if config.kwargs["BLOCK_N"] <= widest]


def _tiles_per_row(N, BLOCK_N, **kwargs):
    return triton.cdiv(N, BLOCK_N)


@triton.autotune(configs=tile_configs(), key=["N"],
                 prune_configs_by={"early_config_prune": _fits_row, "perf_model": _tiles_per_row, "top_k": 2})
@triton.jit
def _lse_kernel(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows_lse(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col, N, BLOCK_M, BLOCK_N, False, False)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(_lse_kernel, x)
