"""The correct, fast row-wise LogSumExp kernel and its launcher.

    out[i] = m_i + log(sum_j exp(x[i, j] - m_i)),   m_i = max_j x[i, j]

Each program owns BLOCK_M rows and one contiguous range of columns (all of them unless the launch
policy splits long rows). It walks it in BLOCK_N-wide tiles, loaded as four column quarters, and
keeps per row a running max ``run_max`` and sum ``run_sum`` of exp(x - run_max) (online rescaling,
Milakov and Gimelshein 2018): when a tile raises the max, the old sum is multiplied by exp(old - new).
Edge semantics follow torch.logsumexp: all -inf -> -inf, any +inf -> +inf, any NaN -> NaN.
"""

from __future__ import annotations

import contextlib
import functools
import math

from ._device import ensure_interpreter

ensure_interpreter()  # must precede the @triton.jit decorators below

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from ._device import check_device, interpreting  # noqa: E402
from ._launch import LaunchConfig, launch_config  # noqa: E402
from ._lse_combine import _finish, _lse_combine_kernel, _rescale, _shift  # noqa: E402
from .oracle import validate_input  # noqa: E402


LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


@triton.jit
def _update(run_max, run_sum, x0, x1, x2, x3):
    """Fold a tile, given as four (BLOCK_M, BLOCK_N / 4) column quarters, into the per-row running
    (max, sum of exp(x - shift(max))). NaN anywhere turns run_sum into NaN and it stays NaN: that
    is how NaN rows come out."""
    new_max = tl.maximum(run_max, tl.max(tl.maximum(tl.maximum(x0, x1), tl.maximum(x2, x3)), axis=1))
    shift = _shift(new_max)
    terms = _exp(x0, shift) + _exp(x1, shift) + _exp(x2, shift) + _exp(x3, shift)
    return new_max, run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)


@triton.jit
def _exp(x, shift):
    """exp(x - shift) per element, as exp2((x - shift) * log2(e)): one multiply and one ex2 (tl.exp
    adds range fix-ups per element)."""
    # Subtract before scaling: x*log2(e) - m*log2(e) overflows float32 for |x| above 2.4e38 (on the
    # GPU a fused multiply-add then turned a lone 2.8e38 into -inf; the fuzzer found it), and
    # m*log2(e) rounded carries an error of u*|m| into every exponent, which for |m| past 2**24 is
    # whole units: exp of it overflows or vanishes (the fuzzer found that too, at m = -1e12).
    return tl.exp2((x - shift[:, None]) * LOG2E)


@triton.jit
def _cols(start, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    cols = start + tl.arange(0, BLOCK_N)
    if INT64:
        # Offsets past 2**31 elements (huge tensors, huge strides) wrap in int32.
        cols = cols.to(tl.int64)
    return cols


@triton.jit
def _load(row_ptrs, cols, stride_col, col_end, MASKED: tl.constexpr, dtype: tl.constexpr):
    ptrs = row_ptrs + cols[None, :] * stride_col
    if MASKED:
        # Masked lanes read -inf: they lose every max comparison and add exp(-inf) = 0 to the sum.
        x = tl.load(ptrs, mask=(cols < col_end)[None, :], other=-float("inf"))
    else:
        x = tl.load(ptrs)
    return x.to(dtype)


@triton.jit
def _tile(run_max, run_sum, row_ptrs, start, col_end, stride_col,
          BLOCK_N: tl.constexpr, INT64: tl.constexpr, MASKED: tl.constexpr):
    """Fold columns [start, start + BLOCK_N) (masked at col_end) into the running (max, sum)."""
    # Four quarter-width loads, not one: Triton spreads a row of each load over as many threads as
    # its 16-byte vectors fill, so a quarter-width row lands on a quarter of the threads, each
    # holding four vectors of it. The max and the sum then reduce mostly inside a thread (fewer
    # shuffles), and the per-row work (shift, rescale, the final log) is repeated by fewer threads.
    # On short rows that work was most of the instructions: on an H200, bfloat16 1048576x128 went
    # from 70% to 86% of copy bandwidth, 131072x1000 from 60% to 85% (bench/RESULTS.md, v5).
    dtype = run_sum.dtype
    cols = _cols(start, BLOCK_N // 4, INT64)
    x0 = _load(row_ptrs, cols, stride_col, col_end, MASKED, dtype)
    x1 = _load(row_ptrs, cols + BLOCK_N // 4, stride_col, col_end, MASKED, dtype)
    x2 = _load(row_ptrs, cols + 2 * (BLOCK_N // 4), stride_col, col_end, MASKED, dtype)
    x3 = _load(row_ptrs, cols + 3 * (BLOCK_N // 4), stride_col, col_end, MASKED, dtype)
    return _update(run_max, run_sum, x0, x1, x2, x3)


# Triton compiles one binary per class of each integer argument (== 1, divisible by 16, other).
# M, N, stride_row and splits stay out of that: the alignment the loads need comes in ROW_ALIGN and
# COL_ALIGN, and M and splits only bound rows and index partials. Each class was another compile
# (about a second on the host) for no faster code: a third of the binaries a mutation analysis
# compiled. stride_col stays: == 1 is what makes a row contiguous.
@triton.jit(do_not_specialize=["M", "N", "stride_row", "splits"])
def _lse_kernel(
    x_ptr, out_ptr, part_max_ptr, part_sum_ptr,
    M, N, stride_row, stride_col, cols_per_split, splits,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PARTIALS: tl.constexpr,
    INT64: tl.constexpr, ROW_ALIGN: tl.constexpr, COL_ALIGN: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    # Rows past M re-read row M - 1 instead of being masked: full tiles then load with no mask at
    # all (no per-element select); those rows' results are never stored.
    safe_rows = tl.minimum(rows, M - 1)
    if INT64:
        # Offsets past 2**31 elements (huge tensors, huge strides) wrap in int32.
        safe_rows = safe_rows.to(tl.int64)
    # The host checked that ROW_ALIGN divides the row stride and COL_ALIGN divides N (and the split
    # width); rewriting them this way (identities) lets the compiler prove alignment of row starts
    # and of the tail mask, so it can issue 16-byte vector loads.
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
        start = col_begin + tile * BLOCK_N
        run_max, run_sum = _tile(run_max, run_sum, row_ptrs, start, col_end, stride_col, BLOCK_N, INT64, False)
    tail = col_begin + full_tiles * BLOCK_N
    if tail < col_end:
        run_max, run_sum = _tile(run_max, run_sum, row_ptrs, tail, col_end, stride_col, BLOCK_N, INT64, True)
    if PARTIALS:
        # Split row: leave (max, sum) for the combine kernel, which merges the `splits` partials.
        part = rows * splits + pid_s
        tl.store(part_max_ptr + part, run_max, mask=rows < M)
        tl.store(part_sum_ptr + part, run_sum, mask=rows < M)
    else:
        tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows < M)


def _num_multiprocessors(device: torch.device) -> int:
    if device.type != "cuda":
        return 1
    return _cuda_multiprocessors(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _cuda_multiprocessors(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D tensor with a Triton kernel.

    Contract: any 2-D ``x`` (M >= 0, N >= 0) of float16, bfloat16, float32 or float64, any strides
    and storage offset (64-bit index math where offsets pass 2**31), any N. Returns a new float32
    tensor of shape (M,) on ``x.device`` (float64 for float64 input), accumulated in float32
    (float64), with the edge semantics of torch.logsumexp. Runs compiled on CUDA tensors, and in
    Triton's interpreter on CPU tensors when no GPU is present.
    """
    validate_input(x)
    check_device(x)
    rows, cols = x.shape
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)
    cfg = launch_config(x, interpreter=interpreting(), multiprocessors=_num_multiprocessors(x.device))
    return _launch(x, cfg, out_dtype)


def _launch(x: torch.Tensor, cfg: LaunchConfig, out_dtype: torch.dtype) -> torch.Tensor:
    """Run the kernel(s) with an explicit configuration (tests force splits and small tiles here)."""
    rows, cols = x.shape
    out = torch.empty(rows, dtype=out_dtype, device=x.device)
    if cfg.splits > 1:
        part_max = torch.empty(rows * cfg.splits, dtype=out_dtype, device=x.device)
        part_sum = torch.empty_like(part_max)
    else:
        part_max = part_sum = out  # never touched when SPLITS == 1
    with _quiet_interpreter():
        _run_kernels(x, out, part_max, part_sum, cfg)
    return out


def _quiet_interpreter():
    """numpy warns about inf - inf in the interpreter's evaluation of both tl.where branches."""
    return np.errstate(all="ignore") if interpreting() else contextlib.nullcontext()


def _run_kernels(x, out, part_max, part_sum, cfg: LaunchConfig) -> None:
    rows, cols = x.shape
    _lse_kernel[cfg.grid](
        x, out, part_max, part_sum,
        rows, cols, x.stride(0), x.stride(1), cfg.cols_per_split, cfg.splits,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, PARTIALS=cfg.splits > 1,
        INT64=cfg.int64, ROW_ALIGN=cfg.row_align, COL_ALIGN=cfg.col_align,
        num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
    )
    if cfg.splits > 1:
        block_rows = 16
        _lse_combine_kernel[(triton.cdiv(rows, block_rows),)](
            part_max, part_sum, out, rows, cfg.splits,
            BLOCK_M=block_rows, BLOCK_S=triton.next_power_of_2(cfg.splits),
        )
