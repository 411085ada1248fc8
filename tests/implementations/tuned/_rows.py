"""The tile loop and the launcher every tuned test kernel shares.

Each program owns BLOCK_M rows and walks them in BLOCK_N-wide tiles, keeping per row a running max
and a running sum of exp(x - max) (online rescaling, Milakov and Gimelshein 2018), with the edge
rules of the reference kernel (its ``_shift``, ``_rescale`` and ``_finish`` from
``reference._lse_combine``): all -inf -> -inf, any +inf -> +inf, any NaN -> NaN. The tile update
is its own: one load per tile and tl.exp, where the reference loads four quarters and uses exp2.
Program 0 also stores BLOCK_N into ``seen_ptr``: the side channel the tests read to learn which
config actually launched. The configs tune BLOCK_N and BLOCK_M together, so the launcher's grid is
a function of the chosen config, as in most tuned kernels.
"""

from __future__ import annotations

import math

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _finish, _rescale, _shift

TILE_WIDTHS = (32, 64, 128, 256)
"""The BLOCK_N of the four configs every tuned kernel offers (32 and up: the tolerance model
assumes at least 32 partial sums per row)."""

ROWS_PER_PROGRAM = (64, 32, 32, 16)
"""Their BLOCK_M: fewer rows as the tile widens, but never so few that the interpreter, whose cost
is per program, crawls through inputs of many short rows."""


def tile_configs(pre_hook=None) -> list[triton.Config]:
    """One config per tile width; warps grow with the width."""
    return [triton.Config({"BLOCK_N": width, "BLOCK_M": rows}, num_warps=max(1, width // 64), pre_hook=pre_hook)
            for width, rows in zip(TILE_WIDTHS, ROWS_PER_PROGRAM)]


@triton.jit
def _update(run_max, run_sum, x):
    """Fold one (BLOCK_M, BLOCK_N) tile into the per-row running (max, sum of exp(x - shift(max)))."""
    new_max = tl.maximum(run_max, tl.max(x, axis=1))
    terms = tl.exp(x - _shift(new_max)[:, None])
    return new_max, run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)


@triton.jit
def rows_lse(x_ptr, out_ptr, seen_ptr, M, N, stride_row, stride_col, col_end,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, UNIT_STRIDE: tl.constexpr):
    """out[rows] = LSE of x's rows; columns at or past ``col_end`` are masked off (correct: N)."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    # Rows past M re-read row M - 1 instead of being masked (their results are never stored), so
    # only the columns need a mask. 64-bit offsets: row * stride_row passes 2**31 on large inputs.
    row_ptrs = x_ptr + tl.minimum(rows, M - 1).to(tl.int64)[:, None] * stride_row
    dtype = out_ptr.dtype.element_ty  # float32, or float64 for float64 input
    run_max = tl.full([BLOCK_M], -float("inf"), dtype)
    run_sum = tl.zeros([BLOCK_M], dtype)
    for start in range(0, N, BLOCK_N):
        cols = (start + tl.arange(0, BLOCK_N)).to(tl.int64)
        if UNIT_STRIDE:
            ptrs = row_ptrs + cols[None, :]
        else:
            ptrs = row_ptrs + cols[None, :] * stride_col
        if EVEN_N:
            x = tl.load(ptrs)  # N is a multiple of BLOCK_N: every tile is full, no mask needed
        else:
            # Masked lanes read -inf: they lose every max and add exp(-inf) = 0 to the sum.
            x = tl.load(ptrs, mask=(cols < col_end)[None, :], other=-float("inf"))
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows < M)
    if tl.program_id(0) == 0:
        tl.store(seen_ptr, BLOCK_N)


_last_seen: torch.Tensor | None = None


def launch(kernel, x: torch.Tensor) -> torch.Tensor:
    """The shared launcher: BLOCK_M rows a program; M = 0 or N = 0 answered without a launch."""
    global _last_seen
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    seen = torch.zeros(1, dtype=torch.int32, device=x.device)
    grid = lambda meta: (triton.cdiv(rows, meta["BLOCK_M"]),)  # noqa: E731  (BLOCK_M: the config's)
    kernel[grid](x, out, seen, rows, cols, x.stride(0), x.stride(1))
    _last_seen = seen
    return out


def launched_block_n() -> int:
    """The BLOCK_N the last launch's kernel wrote (its compiled constexpr), then forget it."""
    global _last_seen
    assert _last_seen is not None, "no kernel launched since the last read"
    block_n, _last_seen = int(_last_seen.item()), None
    return block_n
