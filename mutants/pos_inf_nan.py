"""Mutant: rows holding +inf give NaN: inf - inf, because the shift is guarded for -inf only.

Bug: ``_shift`` replaces only a -inf max by 0; a +inf max is subtracted from the row, and the +inf
entry becomes inf - inf = NaN.

Pitfall: the guard against -inf - (-inf) (fully masked rows) is the one everybody meets first; the
symmetric case, a +inf logit, gets forgotten. torch.logsumexp returns +inf for a row holding +inf
(even beside -inf), while the shifted formula evaluates exp(inf - inf) = NaN.

Documented: pytorch/pytorch#6864 (softmax returns NaN when one +inf is present);
pytorch/pytorch#49724 (unnecessary NaN from +-inf in logsumexp); bdusell/semiring-einsum#13
(log_einsum returns NaN instead of inf).

Killed by: ``agreement`` (rows of recipes pos_inf and pos_and_neg_inf); nothing else, since both
calls of a metamorphic pair agree on NaN.

Minimal input: ``[[inf]]`` -> expected +inf, got NaN.
"""

from __future__ import annotations

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)
import torch
import triton
import triton.language as tl

from reference._lse_combine import _finish, _rescale
from reference._lse_kernel import LOG2E

from ._launch import kernel_device, launch


@triton.jit
def _shift(m):
    """The value subtracted before exp."""
    # BUG: only a -inf max is replaced by 0; a +inf max is subtracted and inf - inf = NaN.
    return tl.where(m == -float("inf"), 0.0, m)


@triton.jit
def _update(run_max, run_sum, x):
    """Fold a (BLOCK_M, BLOCK_N) tile into the per-row running (max, sum of exp(x - max))."""
    new_max = tl.maximum(run_max, tl.max(x, axis=1))
    # NaN anywhere turns run_sum into NaN here and it stays NaN: that is how NaN rows come out.
    terms = tl.exp2((x - _shift(new_max)[:, None]) * LOG2E)
    return new_max, run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)


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
    full_tiles = (col_end - col_begin) // BLOCK_N
    for tile in range(0, full_tiles):
        cols = col_begin + tile * BLOCK_N + tl.arange(0, BLOCK_N)
        if INT64:
            cols = cols.to(tl.int64)
        x = tl.load(row_ptrs + cols[None, :] * stride_col)
        run_max, run_sum = _update(run_max, run_sum, x.to(dtype))
    tail = col_begin + full_tiles * BLOCK_N
    if tail < col_end:
        cols = tail + tl.arange(0, BLOCK_N)
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
    return torch.tensor([[float("inf")]]).to(kernel_device())
