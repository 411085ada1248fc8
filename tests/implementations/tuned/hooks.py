"""Correct, with every hook the autotuner takes: a ``pre_hook`` on each config (it runs before
every launch of that config, tuned or not), an autotuner-level ``pre_hook`` and ``post_hook`` (run
around each benchmark run only), and the deprecated ``warmup``/``rep`` timing arguments, which make
Triton build its own benchmarker (a GPU timer) when the kernel is decorated.

``CALLS`` records the hooks' calls as (hook, BLOCK_N or None) for the tests.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._rows import launch, rows_lse, tile_configs

CALLS: list[tuple[str, int | None]] = []


def _config_hook(nargs):
    CALLS.append(("config", nargs["BLOCK_N"]))


def _bench_pre_hook(nargs, reset_only=False):
    CALLS.append(("pre", nargs.get("BLOCK_N")))


def _bench_post_hook(nargs, exception):
    CALLS.append(("post", nargs.get("BLOCK_N")))


@triton.autotune(configs=tile_configs(pre_hook=_config_hook), key=["N"],
                 pre_hook=_bench_pre_hook, post_hook=_bench_post_hook, warmup=5, rep=5)
@triton.jit
def _lse_kernel(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows_lse(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col, N, BLOCK_M, BLOCK_N, False, False)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(_lse_kernel, x)
