"""Launch policy for the LSE kernel: one place decides tile shape, warps and the row split.

The kernel is memory-bound (about 2 FLOPs per 4 bytes read), so the policy's only job is to keep
enough bytes in flight on every multiprocessor:

* short rows: several rows per program (BLOCK_M > 1), so each program still moves a large tile;
* long rows: the row is looped over in BLOCK_N-wide tiles with online rescaling (never truncated);
* few, very long rows: the row is split across SPLITS programs whose partial (max, sum) pairs a
  second, tiny kernel merges, so the grid covers the machine even when M is small.

In Triton's interpreter the same kernel runs on the CPU, program by program, so there the policy
does not chase bandwidth: it makes the kernel take the paths it takes on a GPU, at sizes a CPU
runs quickly, so the fuzzer exercises them. Tiles are ``_INTERPRETER_BLOCK_N`` = 256 columns,
widened so that no row takes more than ``_INTERPRETER_MAX_TILES`` = 8 tiles (each loop iteration
costs milliseconds of interpreter time), and rows of ``_INTERPRETER_SPLIT_FROM_TILES`` = 4 tiles
or more are split into up to ``_INTERPRETER_SPLITS`` = 4 partials. A row of N columns then takes
one tile (N <= 256; a masked tail unless N is a power of two from 4, the narrowest tile, which
the kernel loads as four column quarters), a loop of 2 or 3 tiles
(257..768), or a split with a loop in each partial and the combine kernel (N >= 769). The largest
tiles and no split, which would save interpreter time, leave the loop, the tail after full tiles
and the combine unrun on a CPU, and half the pitfalls in mutants/ live there.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

# Measured on an H200 with bench/tune_lse.py (logs in bench/results/): 16 KiB tiles (many rows per
# program for short rows), at most 4096 columns a tile, 4 warps (8 for rows that fill that tile:
# below), no software pipelining (num_stages=1 was never slower, and up to 2x faster for bfloat16),
# and a row split only when there are fewer row blocks than two per multiprocessor.
_GPU_TILE_BYTES = 16 * 1024
_GPU_MAX_BLOCK_N = 4096
_GPU_MIN_BLOCK_N = 16
_GPU_WAVES = 2
_GPU_NUM_WARPS = 4
# Rows that fill the widest tile (one or two rows a program, a loop over tiles): 8 warps. With the
# quarter-width loads, 4 warps lost up to 14 points of copy bandwidth there (float32 256x1048576:
# 86% against 99% with 8; bench/results/2026-11-30-h200-kernel-variants-long-rows.txt), and short
# rows keep 4, which is where the quarters pay.
_GPU_LONG_ROW_WARPS = 8
_GPU_NUM_STAGES = 1
_INTERPRETER_BLOCK_N = 256
_INTERPRETER_MIN_BLOCK_N = 4  # the kernel loads a tile as four column quarters
_INTERPRETER_MAX_TILES = 8
_INTERPRETER_TILE = 1 << 16  # elements per program: short rows share a program, as on a GPU
_INTERPRETER_SPLITS = 4
_INTERPRETER_SPLIT_FROM_TILES = 4
MAX_SPLITS = 1024


@dataclass(frozen=True)
class LaunchConfig:
    block_m: int
    block_n: int
    splits: int
    cols_per_split: int
    num_warps: int
    num_stages: int
    int64: bool
    row_align: int
    col_align: int
    row_blocks: int

    @property
    def grid(self) -> tuple[int, int]:
        return (self.row_blocks, self.splits)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _align(n: int, element_size: int) -> int:
    """One 16-byte vector's worth of elements when that divides ``n``, else 1.

    The hint lets the compiler prove that a row (or a split) starts on a 16-byte boundary, so loads
    are full vectors. Only two values on purpose: every distinct constexpr is another compiled
    kernel, and a partial claim (8 bytes, say) bought no measurable speed for its compiles.
    """
    vector = max(1, 16 // element_size)
    return vector if n % vector == 0 else 1


def needs_int64(x: torch.Tensor) -> bool:
    """True when some element's offset from the view's first element does not fit in an int32.

    The kernel receives ``x.data_ptr()``, which already includes the storage offset, so only the
    offsets the kernel computes itself (row * stride_row + col * stride_col) matter.
    """
    rows, cols = x.shape
    return _largest_offset(rows, cols, x.stride(0), x.stride(1)) >= 2**31 - 1


def largest_view_offset(t: torch.Tensor) -> int:
    """The largest element offset, from its storage offset, that a view of any rank reaches (0 when empty)."""
    return sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride())) if t.numel() else 0


def _largest_offset(rows: int, cols: int, stride_row: int, stride_col: int) -> int:
    return (rows - 1) * abs(stride_row) + (cols - 1) * abs(stride_col)


def launch_config(x: torch.Tensor, *, interpreter: bool, multiprocessors: int = 132) -> LaunchConfig:
    """The launch for ``x``; cached, since a kernel of tens of microseconds cannot afford the
    Python work of choosing it on every call."""
    rows, cols = x.shape
    return _cached_config(rows, cols, x.stride(0), x.stride(1), x.element_size(), interpreter, multiprocessors)


@functools.lru_cache(maxsize=1024)
def _cached_config(
    rows: int, cols: int, stride_row: int, stride_col: int, element_size: int, interpreter: bool, multiprocessors: int
) -> LaunchConfig:
    assert rows > 0 and cols > 0, "empty inputs never reach the kernel"
    if interpreter:
        widest = max(_INTERPRETER_BLOCK_N, _next_pow2(math.ceil(cols / _INTERPRETER_MAX_TILES)))
        block_n = max(_INTERPRETER_MIN_BLOCK_N, min(_next_pow2(cols), widest))
        block_m = max(1, min(_INTERPRETER_TILE // block_n, _next_pow2(rows)))
        row_blocks = math.ceil(rows / block_m)
        tiles_per_row = math.ceil(cols / block_n)
        splits = 1
        if tiles_per_row >= _INTERPRETER_SPLIT_FROM_TILES:
            # Two tiles or more per partial (the last takes what is left), so the partials loop too.
            splits = min(_INTERPRETER_SPLITS, tiles_per_row // 2)
        num_warps = 4
    else:
        tile = _GPU_TILE_BYTES // element_size
        # A tile is always tile-sized, masked rows and columns included, rather than shrunk to a
        # small input: the shape of a tile is then one of a dozen, not one per input shape, and
        # each shape is a compiled kernel (about a second on the host). Masked lanes of a tiny
        # input move no bytes, so nothing measurable is lost.
        block_n = min(max(_next_pow2(cols), _GPU_MIN_BLOCK_N), _GPU_MAX_BLOCK_N)
        block_m = max(1, tile // block_n)
        row_blocks = math.ceil(rows / block_m)
        tiles_per_row = math.ceil(cols / block_n)
        target = _GPU_WAVES * multiprocessors
        splits = 1
        if row_blocks < target and tiles_per_row > 1:
            splits = min(tiles_per_row, math.ceil(target / row_blocks), MAX_SPLITS)
        num_warps = _GPU_LONG_ROW_WARPS if block_n == _GPU_MAX_BLOCK_N else _GPU_NUM_WARPS
    tiles_per_split = math.ceil(math.ceil(cols / block_n) / splits)
    cols_per_split = tiles_per_split * block_n
    splits = math.ceil(cols / cols_per_split)  # no empty split
    return LaunchConfig(
        block_m=block_m,
        block_n=block_n,
        splits=splits,
        cols_per_split=cols_per_split,
        num_warps=num_warps,
        num_stages=_GPU_NUM_STAGES,
        int64=_largest_offset(rows, cols, stride_row, stride_col) >= 2**31 - 1,
        row_align=_align(stride_row, element_size),
        col_align=_align(math.gcd(cols, cols_per_split), element_size),
        row_blocks=row_blocks,
    )
