"""Checks of the backward (``--backward``): the gradient's values, and the input it must leave alone.

One more call per example: the implementation's forward and backward at the example's input for
the upstream gradient of :mod:`fuzz.gradient`, run as ``gradient_of(impl)`` (in the worker, for an
isolated implementation). Its result dx is judged against dx = g[:, None] * softmax(x), the float64
oracle of ``reference.gradient``, element by element, with the tolerance derived there; rows of
-inf, +inf and NaN follow torch's own gradient (NaN where it has NaN).
"""

from __future__ import annotations

import torch

from reference import compare_gradient

from ..contract import dtype_name
from ..failures import CheckFailure
from ..gradient import upstream_gradient
from ..strategies import LseInput
from .context import Context, Impl
from .first_call import raise_if_input_changed


def gradient(ctx: Context, check: str) -> torch.Tensor:
    """The example's dx (computed once, by the example's backward call), or a failure of ``check``
    saying why it cannot be judged. Autograd itself holds a gradient to its input's shape (it
    raises otherwise: the implementation's error), dtype and device (it converts to them), so what
    reaches the checks is a tensor of x's shape and dtype: judged here in case it is not."""
    if ctx.dx is None:
        ctx.dx = ctx.call(ctx.example.x, "the backward call", impl=ctx.gradient_impl)
    dx, x = ctx.dx, ctx.example.x
    if not isinstance(dx, torch.Tensor):
        what = getattr(dx, "type_name", None) or type(dx).__name__
        raise CheckFailure(check, f"the backward returned a {what} for x, not a torch.Tensor")
    if dx.layout != torch.strided or tuple(dx.shape) != tuple(x.shape) or not dx.dtype.is_floating_point:
        raise CheckFailure(check, f"the gradient is a {dx.layout} tensor of shape {tuple(dx.shape)} and dtype "
                                  f"{dx.dtype}; x is {tuple(x.shape)} {x.dtype}")
    return dx.detach()


def check_grad_input_unchanged(impl: Impl, example: LseInput, ctx: Context) -> None:
    gradient(ctx, "grad_input_unchanged")
    raise_if_input_changed("grad_input_unchanged", example, ctx, "the forward and backward")


def check_grad_agreement(impl: Impl, example: LseInput, ctx: Context) -> None:
    dx = gradient(ctx, "grad_agreement")
    rows = example.shape[0]
    out_dtype = ctx.out.dtype if isinstance(ctx.out, torch.Tensor) and ctx.out.dtype.is_floating_point \
        else torch.float32
    grad = upstream_gradient(rows, out_dtype, "cpu")
    comparison = compare_gradient(example.values, grad, dx.cpu())
    where = comparison.first_mismatch()
    if where is None:
        return
    row, col = where
    raise CheckFailure(
        "grad_agreement",
        f"dx[{row}, {col}] differs from g[{row}] * softmax(x[{row}])[{col}] in float64",
        row=row,
        expected=float(comparison.expected[row, col]),
        got=float(comparison.got[row, col]),
        out_dtype=dtype_name(comparison.dtype),
        explanation=comparison.explain(row, col),
        mismatches=int(comparison.mismatch.any(dim=1).sum()),  # rows, as the report counts them
        rows=rows,
        details=[f"elements: {comparison.mismatches} of {comparison.mismatch.numel()} differ",
                 f"upstream: g[{row}] = {float(grad[row])!r} (g_i = ((37 i) mod 17 - 8) / 4)",
                 f"row {row}:   recipe {example.row_recipe(row)}, x[{row}, {col}] = {example.values[row, col].item()!r}"],
    )
