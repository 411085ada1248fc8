"""``autotuned.py`` with one bug in one config: on the BLOCK_N = 32 path the tail mask admits one
column past the row (``cols < N + 1``), so that lane reads whatever follows the row in memory.

Every other config is correct, so on a GPU the bug shows only if the autotuner happens to pick
BLOCK_N = 32 for some N, and in the interpreter it cannot run at all without pinning. Exposed by
any row whose length is not a multiple of 32 with a large value just past it: a (1, 33) view of
zeros in a row padded with 100.0 gives about 100 instead of log 33 = 3.4965.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._rows import launch, rows_lse, tile_configs


@triton.autotune(configs=tile_configs(), key=["N"])
@triton.jit
def _lse_kernel(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    col_end = N
    if BLOCK_N == 32:
        col_end = N + 1  # BUG: off by one, only in the 32-wide specialisation
    rows_lse(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col, col_end, BLOCK_M, BLOCK_N, False, False)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(_lse_kernel, x)
