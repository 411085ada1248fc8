"""The gradient of the row-wise LogSumExp, as a Triton kernel, and ``reference.lse`` with it.

    out[i] = lse(x)[i]          dx[i, j] = g[i] * exp(x[i, j] - out[i]) = g[i] * softmax(x[i])[j]

where g is the upstream gradient (shape (M,)). The forward is ``reference.lse`` unchanged; it saves
its float32 (float64) result, never one rounded to the input's dtype, so the exponent x - out is as
accurate as the forward (torch.logsumexp's own backward reuses its output rounded to the input dtype,
which costs up to half an ulp of out in every exponent; the tolerance model admits both).

Edge semantics are torch's, which are those of the formula itself: an all -inf row has out = -inf
and every x - out = -inf - (-inf) = NaN, so its gradient is NaN; a row with +inf has NaN where x is
+inf and 0 elsewhere; a NaN row is NaN throughout; g[i] = 0 gives 0 unless the softmax is NaN.

Each program owns a BLOCK_M x BLOCK_N tile of x (a 2-D grid over row blocks and column tiles): the
work is elementwise once out is known, so no program loops and every tile is independent.
"""

from __future__ import annotations

import math

from ._device import ensure_interpreter

ensure_interpreter()  # must precede the @triton.jit decorators below

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from ._device import check_device, interpreting  # noqa: E402
from ._launch import needs_int64  # noqa: E402
from ._lse_kernel import _quiet_interpreter  # noqa: E402
from ._lse_kernel import lse as _lse_forward  # noqa: E402
from .errors import InvalidArgument  # noqa: E402

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)

# 16 KiB of x a program on a GPU (as the forward's tiles), 2**16 elements in the interpreter.
_GPU_TILE_BYTES = 16 * 1024
_GPU_MAX_BLOCK_N = 4096
_INTERPRETER_TILE = 1 << 16
_MAX_GRID_COLUMNS = 65535  # CUDA's limit on the grid's second dimension


@triton.jit(do_not_specialize=["M", "N", "stride_row", "stride_col", "stride_g"])
def _lse_backward_kernel(
    x_ptr, out_ptr, g_ptr, dx_ptr,
    M, N, stride_row, stride_col, stride_g,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    if INT64:
        # Offsets past 2**31 elements (huge tensors, huge strides) wrap in int32.
        rows = rows.to(tl.int64)
        cols = cols.to(tl.int64)
    row_in = rows < M
    mask = row_in[:, None] & (cols < N)[None, :]
    dtype = out_ptr.dtype.element_ty  # float32, or float64 for float64 input
    # Masked lanes load nothing that is stored: any value will do, and 0 keeps exp finite there.
    x = tl.load(x_ptr + rows[:, None] * stride_row + cols[None, :] * stride_col, mask=mask, other=0.0).to(dtype)
    out = tl.load(out_ptr + rows, mask=row_in, other=0.0)
    g = tl.load(g_ptr + rows * stride_g, mask=row_in, other=0.0).to(dtype)
    # No max shift is needed: out >= max_j x[i, j], so every exponent is <= 0 (up to the forward's
    # rounding) and exp cannot overflow. -inf - (-inf) is NaN, as torch's gradient has it.
    softmax = tl.exp2((x - out[:, None]) * LOG2E)
    dx = g[:, None] * softmax
    # Row-major dx of x's shape: index math of its own (x's strides may be anything).
    tl.store(dx_ptr + rows[:, None] * N + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)


def lse_backward(x: torch.Tensor, out: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """dx = grad[:, None] * exp(x - out[:, None]): the gradient of ``reference.lse`` at ``x``.

    ``out`` is the forward's result (float32, float64 for float64 ``x``), ``grad`` the upstream
    gradient of shape (M,). Returns a new contiguous tensor of ``x``'s shape and dtype.
    """
    check_device(x)
    rows, cols = x.shape
    if tuple(grad.shape) != (rows,):
        raise InvalidArgument(f"grad.shape={tuple(grad.shape)}; expected ({rows},), the shape of lse(x).")
    dx = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    if rows == 0 or cols == 0:
        return dx
    block_n, block_m = _tile(rows, cols, x.element_size())
    grid = (triton.cdiv(rows, block_m), triton.cdiv(cols, block_n))
    int64 = needs_int64(x) or rows * cols >= 2**31 - 1
    with _quiet_interpreter():
        _lse_backward_kernel[grid](
            x, out, grad, dx, rows, cols, x.stride(0), x.stride(1), grad.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, INT64=int64,
        )
    return dx


def _tile(rows: int, cols: int, element_size: int) -> tuple[int, int]:
    """(BLOCK_N, BLOCK_M): a tile of about 16 KiB on a GPU (2**16 elements in the interpreter), as
    wide as the row up to 4096 columns, and wider where the grid would pass 65535 column tiles."""
    elements = _INTERPRETER_TILE if interpreting() else _GPU_TILE_BYTES // element_size
    block_n = min(triton.next_power_of_2(cols), _GPU_MAX_BLOCK_N)
    block_n = max(block_n, triton.next_power_of_2(math.ceil(cols / _MAX_GRID_COLUMNS)))
    block_m = max(1, min(elements // block_n, triton.next_power_of_2(rows)))
    return block_n, block_m


class LseFunction(torch.autograd.Function):
    """``reference.lse`` with its Triton backward: ``LseFunction.apply(x)``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        out = _lse_forward(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        x, out = ctx.saved_tensors
        return lse_backward(x, out, grad.to(out.dtype))


def lse_autograd(x: torch.Tensor) -> torch.Tensor:
    """``reference.lse`` (same values, same contract) whose result supports autograd: the gradient
    is :func:`lse_backward`, a Triton kernel."""
    return LseFunction.apply(x)
