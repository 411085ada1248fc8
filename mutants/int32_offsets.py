"""Mutant: 32-bit row offsets that wrap past 2**31 elements (the INT64 path removed).

Bug: the ``INT64`` casts are gone, so ``safe_rows * stride_row`` is computed in int32 even when
the launcher saw offsets >= 2**31 and asked for 64-bit index math.

Pitfall: in Triton, int32 * int32 stays int32. A row stride that fits in int32 (say 2**30)
times a row index of 2 or more wraps to a negative offset, and the load reads before the row: an
illegal memory access on a GPU if that address is unmapped, silently wrong values if it is mapped.
Tests rarely build tensors with 2**31 elements, so the bug ships. (A stride >= 2**31 is passed as
an int64 argument and hides the bug: it takes a stride below 2**31 and three rows or more.)

Documented: triton-lang/triton#832 and #6748 (pointer offsets overflow int32);
databricks/megablocks#185 (offset * NUM_COLUMNS wraps negative, illegal memory access);
fla-org/flash-linear-attention#1080 (silent corruption past 2**31 elements).

Killed by: ``agreement`` on the harness's huge-offset probe (fuzz.mutation): a float16 view of 3
rows at row stride 2**30 + pad whose first element lies 2**31 elements into a lazily allocated
storage, so the wrapped offset of row 2 lands inside the allocation (it reads zeros) instead of
crashing the process. Examples the fuzzer draws by default stay far below 2**31 elements.

Minimal input: 3 rows of ``[1.0, 1.0, 1.0, 1.0]`` (float16) at row stride 2**30 + 1 and storage
offset 2**31 (8 GiB of storage, untouched except for the 12 elements) -> expected
1 + log 4 = 2.3863 for every row, got log 4 = 1.3863 for row 2 (it read 4 zeros).
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
    # Identities the host guaranteed (ROW_ALIGN divides the stride, COL_ALIGN divides N): they let
    # the compiler prove the alignment of row starts and of the tail mask.
    stride_row = (stride_row // ROW_ALIGN) * ROW_ALIGN
    N = (N // COL_ALIGN) * COL_ALIGN
    # BUG: no int64 cast on the INT64 path: row * stride_row wraps in int32 past 2**31 elements.
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
    full_tiles = (col_end - col_begin) // BLOCK_N
    for tile in range(0, full_tiles):
        cols = col_begin + tile * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(row_ptrs + cols[None, :] * stride_col)
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    tail = col_begin + full_tiles * BLOCK_N
    if tail < col_end:
        cols = tail + tl.arange(0, BLOCK_N)
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
    rows, cols, row_stride, offset = 3, 4, 2**30 + 1, 2**31
    size = offset + (rows - 1) * row_stride + cols
    # torch.empty on a CPU maps pages lazily: the 8 GiB cost nothing until touched, and untouched
    # pages read as zeros. A GPU has no lazy pages; zero it so the wrapped read is deterministic.
    device = kernel_device()
    make = torch.empty if device.type == "cpu" else torch.zeros
    storage = make(size, dtype=torch.float16, device=device)
    x = storage.as_strided((rows, cols), (row_stride, 1), offset)
    x.fill_(1.0)
    return x
