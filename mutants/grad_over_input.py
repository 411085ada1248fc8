"""Backward mutant: the gradient is written over the input instead of into a new tensor.

Patch: in ``_lse_backward_kernel`` (reference/_lse_backward_kernel.py) the store of dx goes to
x's memory (its own strides) rather than to dx's.

Pitfall: an in-place backward saves one allocation, and is right exactly when nothing else needs
x: but x is the previous layer's activation, saved for that layer's backward (and the caller's
tensor), so training goes wrong silently, one layer down. The returned gradient is then whatever
the uninitialised buffer held.

Documented: PyTorch, "Extending torch.autograd" (a backward must not modify its saved inputs; the
version counter catches only in-place ops autograd sees, not a kernel's stores).

Killed by: ``grad_input_unchanged`` with ``--backward``.

Minimal input: ``[[1.0, 2.0]]`` -> x changed at [0, 0].
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "grad_input_unchanged"
FUNCTION = "lse_autograd"
BACKWARD = True

PATH = "reference/_lse_backward_kernel.py"
ANCHOR = "tl.store(dx_ptr + rows[:, None] * N + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)"
REPLACEMENT = ("tl.store(x_ptr + rows[:, None] * stride_row + cols[None, :] * stride_col, "
               "dx.to(x_ptr.dtype.element_ty), mask=mask)")


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[1.0, 2.0]], device=device)
