"""The launcher every mutant shares: the reference launcher with the kernels passed in.

A mutant is a copy of ``reference/_lse_kernel.py`` (or of the combine kernel) with one bug. Its
``lse(x)`` calls :func:`launch` with its own kernel; everything around the kernel (input checks,
empty inputs, output allocation, the split-row partials and the combine launch) is the reference
launcher's, so the only difference between a mutant and the correct kernel is the bug.

Launch policy. On a GPU it is the reference policy (:func:`reference._launch.launch_config`):
tiles of up to 4096 columns, a row split when there are few rows. In Triton's interpreter the
reference policy takes one tile per row and never splits (each program costs Python time), so
on a CPU the loop over tiles, the tail tile after full tiles and the split-row combine would never
run, and half the pitfalls live there. :func:`launch_config` therefore keeps the reference's shape
but scales it down for the interpreter: tiles of ``INTERPRETER_BLOCK_N`` = 256 columns, widened
so that no row takes more than ``INTERPRETER_MAX_TILES`` = 8 tiles (each loop iteration costs
milliseconds of interpreter time), and rows of ``SPLIT_FROM_TILES`` = 4 tiles or more split into
up to ``INTERPRETER_SPLITS`` = 4 partials. A row of N columns then takes one tile (N <= 256), a
loop of 2 or 3 tiles (257..768), or a split with a loop in each partial (N >= 769).

:func:`unmutated_lse` runs the correct kernel through this launcher: the mutation harness's gate
requires it to pass, so a mutant is only ever killed by its own bug.
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before any kernel)
import torch
import triton

from reference._device import check_device, interpreting
from reference._launch import LaunchConfig, _align, _next_pow2, needs_int64
from reference._launch import launch_config as reference_launch_config
from reference._lse_combine import _lse_combine_kernel
from reference._lse_kernel import _lse_kernel, _num_multiprocessors, _quiet_interpreter
from reference.oracle import validate_input

INTERPRETER_BLOCK_N = 256
INTERPRETER_MAX_TILES = 8
INTERPRETER_TILE = 1 << 16  # elements per program tile, as in the reference interpreter policy
INTERPRETER_SPLITS = 4
SPLIT_FROM_TILES = 4
COMBINE_BLOCK_ROWS = 16  # rows per program of the combine kernel (the reference launcher's)


def launch_config(x: torch.Tensor) -> LaunchConfig:
    """The reference policy on a GPU; in the interpreter, small tiles and split long rows."""
    if not interpreting():
        return reference_launch_config(x, interpreter=False, multiprocessors=_num_multiprocessors(x.device))
    rows, cols = x.shape
    block_n = min(_next_pow2(cols), max(INTERPRETER_BLOCK_N, _next_pow2(math.ceil(cols / INTERPRETER_MAX_TILES))))
    block_m = max(1, min(INTERPRETER_TILE // block_n, _next_pow2(rows)))
    tiles = math.ceil(cols / block_n)
    splits = min(INTERPRETER_SPLITS, tiles // 2) if tiles >= SPLIT_FROM_TILES else 1
    cols_per_split = math.ceil(tiles / splits) * block_n
    splits = math.ceil(cols / cols_per_split)  # no empty split
    return LaunchConfig(
        block_m=block_m,
        block_n=block_n,
        splits=splits,
        cols_per_split=cols_per_split,
        num_warps=4,
        num_stages=1,
        int64=needs_int64(x),
        row_align=_align(x.stride(0), x.element_size()),
        col_align=_align(math.gcd(cols, cols_per_split), x.element_size()),
        row_blocks=math.ceil(rows / block_m),
    )


def kernel_device() -> torch.device:
    """Where the kernels run: CPU tensors in the interpreter, else the current CUDA device."""
    return torch.device("cpu") if interpreting() else torch.device("cuda")


def output_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def launch(x: torch.Tensor, kernel=_lse_kernel, combine_kernel=_lse_combine_kernel) -> torch.Tensor:
    """``reference.lse`` with ``kernel`` (and ``combine_kernel``) in place of the reference's."""
    validate_input(x)
    check_device(x)
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=output_dtype(x), device=x.device)
    return run_kernels(x, launch_config(x), kernel, combine_kernel)


def run_kernels(x: torch.Tensor, cfg: LaunchConfig, kernel=_lse_kernel,
                combine_kernel=_lse_combine_kernel) -> torch.Tensor:
    """Allocate the output (and partials), launch ``kernel`` and, for split rows, ``combine_kernel``."""
    rows, cols = x.shape
    out = torch.empty(rows, dtype=output_dtype(x), device=x.device)
    if cfg.splits > 1:
        part_max = torch.empty(rows * cfg.splits, dtype=out.dtype, device=x.device)
        part_sum = torch.empty_like(part_max)
    else:
        part_max = part_sum = out  # never touched without a split
    constants = dict(
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, PARTIALS=cfg.splits > 1,
        INT64=cfg.int64, ROW_ALIGN=cfg.row_align, COL_ALIGN=cfg.col_align,
        PREFETCH=getattr(cfg, "prefetch", False),
    )
    # Mutants copy the kernel as it was when they were written; the reference kernel may have
    # gained options since. Each kernel gets the options it declares.
    constants = {name: value for name, value in constants.items() if name in kernel.arg_names}
    with _quiet_interpreter():
        kernel[cfg.grid](
            x, out, part_max, part_sum,
            rows, cols, x.stride(0), x.stride(1), cfg.cols_per_split, cfg.splits,
            **constants, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )
        if cfg.splits > 1:
            combine_kernel[(triton.cdiv(rows, COMBINE_BLOCK_ROWS),)](
                part_max, part_sum, out, rows,
                SPLITS=cfg.splits, BLOCK_M=COMBINE_BLOCK_ROWS, BLOCK_S=triton.next_power_of_2(cfg.splits),
            )
    return out


def unmutated_lse(x: torch.Tensor) -> torch.Tensor:
    """The correct kernel through the mutants' launcher: the baseline every mutant differs from."""
    return launch(x)
