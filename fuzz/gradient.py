"""The backward of an implementation (``--backward``): its gradient at x for a fixed upstream gradient.

For an implementation whose result supports autograd (a ``torch.autograd.Function`` with a Triton
backward, or any differentiable torch code), :func:`gradient_of` turns ``lse(x)`` into
``x -> dx``: it calls the implementation on a leaf view of x (same storage, strides and offset),
and differentiates the result with torch.autograd for the upstream gradient

    g_i = ((37 i) mod 17 - 8) / 4,      i = 0 .. M - 1

zeros (0 * NaN is NaN: the edge semantics show), negatives and magnitudes up to 2, exact in every
floating dtype, so the oracle (``reference.lse_grad_reference``) sees the very g the
implementation saw. The checks of :mod:`fuzz.checks.backward` judge dx against
dx = g[:, None] * softmax(x) with the tolerance of ``reference.gradient``.

An implementation that cannot be differentiated is bad input for ``--backward`` (one line, exit 2):
:class:`NotDifferentiable` names what it returned and how to fix it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .calls import ConventionError

__all__ = ["NotDifferentiable", "gradient_of", "upstream_gradient"]


class NotDifferentiable(ConventionError):
    """``--backward`` was asked of an implementation whose result autograd cannot differentiate:
    bad input (exit 2), as a result of another structure than declared is."""


def upstream_gradient(rows: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """The upstream gradient g of the module docstring, shape (rows,), in ``dtype`` on ``device``."""
    index = torch.arange(rows, dtype=torch.int64)
    return (((37 * index) % 17 - 8).to(torch.float64) / 4).to(dtype=dtype, device=device)


def gradient_of(fn: Callable[[torch.Tensor], object]) -> Callable[[torch.Tensor], torch.Tensor]:
    """``x -> dx``: the gradient of ``fn``'s result at ``x`` for :func:`upstream_gradient`."""

    def gradient(x: torch.Tensor) -> torch.Tensor:
        leaf = x.detach().requires_grad_(True)  # a leaf sharing x's storage: x's strides and offset
        with torch.enable_grad():
            out = fn(leaf)
            if not isinstance(out, torch.Tensor):
                raise NotDifferentiable(
                    f"--backward: the implementation returned {type(out).__name__}, not a tensor autograd can "
                    "differentiate; return the LSE tensor (or declare where it is with --result).")
            if not out.requires_grad:
                raise NotDifferentiable(
                    "--backward: the implementation's result does not require grad (no autograd graph): wrap "
                    "the kernel in a torch.autograd.Function with a backward, or drop --backward.")
            if out.dim() != 1 or out.shape[0] != x.shape[0]:
                raise NotDifferentiable(
                    f"--backward: the result has shape {tuple(out.shape)}; a gradient is judged for an "
                    f"(M,) = ({x.shape[0]},) result.")
            g = upstream_gradient(out.shape[0], out.dtype, out.device)
            (dx,) = torch.autograd.grad(out, leaf, g, allow_unused=True)
        if dx is None:
            raise NotDifferentiable(
                "--backward: autograd found no path from the input to the result (its backward returns None "
                "for x, or the result was computed from a detached copy).")
        return dx

    gradient.__name__ = getattr(fn, "__name__", "lse")
    # Autotuned kernels are found from the implementation's module (fuzz.interpreter.autotune.discover).
    gradient.__module__ = getattr(fn, "__module__", None) or __name__
    return gradient
