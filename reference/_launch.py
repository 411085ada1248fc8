"""Launch policy for the LSE kernel: one place decides tile shape, warps and the row split.

The kernel is memory-bound (about 2 FLOPs per 4 bytes read), so the policy's only job is to keep
enough bytes in flight on every multiprocessor:

* short rows: several rows per program (BLOCK_M > 1), so each program still moves a large tile;
* long rows: the row is looped over in BLOCK_N-wide tiles with online rescaling (never truncated);
* few, very long rows: the row is split across SPLITS programs whose partial (max, sum) pairs a
  second, tiny kernel merges, so the grid covers the machine even when M is small.

In Triton's interpreter every program instance costs Python overhead, so there the policy takes the
largest tiles and never splits.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

# Measured on an H200 with bench/tune_lse.py (logs in bench/results/): 16 KiB tiles (many rows per
# program for short rows), at most 4096 columns a tile, 4 warps, no software pipelining (num_stages=1
# was never slower, and up to 2x faster for bfloat16), and a row split only when there are fewer row
# blocks than two per multiprocessor.
_GPU_TILE_BYTES = 16 * 1024
_GPU_MAX_BLOCK_N = 4096
_GPU_MIN_BLOCK_N = 16
_GPU_WAVES = 2
_GPU_NUM_WARPS = 4
_GPU_NUM_STAGES = 1
_INTERPRETER_TILE = 1 << 16
_INTERPRETER_MAX_BLOCK_N = 1 << 14
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
    prefetch: bool = False

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
        block_n = min(_next_pow2(cols), _INTERPRETER_MAX_BLOCK_N)
        block_m = max(1, min(_INTERPRETER_TILE // block_n, _next_pow2(rows)))
        row_blocks = math.ceil(rows / block_m)
        splits, num_warps = 1, 4
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
        num_warps = _GPU_NUM_WARPS
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
