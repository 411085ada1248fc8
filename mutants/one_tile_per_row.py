"""Mutant: long rows silently truncated to one tile.

Bug: the loop over tiles is gone: each program reads one masked BLOCK_N-wide tile from the start
of its column range, which is the whole row only while the launcher's tile covers it.

Pitfall: the Triton softmax tutorial loads a whole row as one tile (BLOCK_SIZE =
next_power_of_2(n_cols)). That stops compiling, or spills registers, for long rows, so launchers
cap the tile width; a kernel without a loop then reads the first BLOCK_N columns and nothing
warns. Vocabulary-sized rows (32k to 256k columns) are exactly where LSE runs.

Documented: Triton tutorial 02-fused-softmax (one tile per row, "the row does not fit" caveat);
the reference launch policy (reference/_launch.py) caps tiles at 4096 columns on a GPU.

Killed by: ``agreement`` on rows longer than one tile (257 columns and more in the interpreter,
4097 and more on a GPU when the row is not split); ``permutation_invariance`` also catches it (the
answer depends on which entries sit in the first tile).

Minimal input: in the interpreter, one row of 257 columns, zeros except x[0, 256] = 10 -> expected
10.0 + log(1 + 256 e^-10) = 10.0116, got log 256 = 5.5452 (column 256 never read). On a GPU the
row must not be split: 264 rows (two waves of an H200's 132 multiprocessors) of 4097 columns.
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _finish
from reference._lse_kernel import _update

from ._launch import kernel_device, launch


@triton.jit
def _lse_kernel(
    x_ptr, out_ptr, part_max_ptr, part_sum_ptr,
    M, N, stride_row, stride_col, cols_per_split, splits,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PARTIALS: tl.constexpr,
    INT64: tl.constexpr, ROW_ALIGN: tl.constexpr, COL_ALIGN: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    # Rows past M re-read row M - 1 instead of being masked; their results are never stored.
    safe_rows = tl.minimum(rows, M - 1)
    if INT64:
        # Offsets past 2**31 elements (huge tensors, huge strides) wrap in int32.
        safe_rows = safe_rows.to(tl.int64)
    # Identities the host guaranteed (ROW_ALIGN divides the stride, COL_ALIGN divides N): they let
    # the compiler prove the alignment of row starts and of the tail mask.
    stride_row = (stride_row // ROW_ALIGN) * ROW_ALIGN
    N = (N // COL_ALIGN) * COL_ALIGN
    row_ptrs = x_ptr + safe_rows[:, None] * stride_row
    dtype = out_ptr.dtype.element_ty  # float32, or float64 for float64 input
    run_max = tl.full([BLOCK_M], -float("inf"), dtype)
    run_sum = tl.zeros([BLOCK_M], dtype)
    if PARTIALS:
        col_begin = pid_s * cols_per_split
        col_end = tl.minimum(col_begin + cols_per_split, N)
    else:
        col_begin = 0
        col_end = N
    # BUG: one masked tile per row (the tutorial's shape): columns past the first BLOCK_N of the
    # range are never read once the launcher caps the tile width.
    cols = col_begin + tl.arange(0, BLOCK_N)
    if INT64:
        cols = cols.to(tl.int64)
    # Masked lanes read -inf: they lose every max comparison and add exp(-inf) = 0 to the sum.
    x = tl.load(row_ptrs + cols[None, :] * stride_col, mask=(cols < col_end)[None, :], other=-float("inf"))
    run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    if PARTIALS:
        # Split row: leave (max, sum) for the combine kernel, which merges the `splits` partials.
        part = rows * splits + pid_s
        tl.store(part_max_ptr + part, run_max, mask=rows < M)
        tl.store(part_sum_ptr + part, run_sum, mask=rows < M)
    else:
        tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows < M)


def lse(x: torch.Tensor) -> torch.Tensor:
    return launch(x, _lse_kernel)


def minimal_input() -> torch.Tensor:
    from reference._device import interpreting

    rows, cols = (1, 257) if interpreting() else (264, 4097)
    x = torch.zeros(rows, cols, device=kernel_device())
    x[:, -1] = 10.0
    return x
