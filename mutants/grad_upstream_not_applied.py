"""Backward mutant: the upstream gradient is not applied: dx = softmax(x) instead of g * softmax(x).

Patch: in ``_lse_backward_kernel`` (reference/_lse_backward_kernel.py) ``dx = g[:, None] * softmax``
becomes ``dx = softmax``.

Pitfall: the derivative of lse is the softmax, and a backward written from that fact alone forgets
the chain rule's factor: right whenever the loss is lse itself summed (g = 1, the usual unit test),
wrong inside any real loss (cross-entropy scales each row by its own g, masked rows have g = 0).

Documented: the autograd contract, grad_input = grad_output * d out / d input (PyTorch,
"Extending torch.autograd"); Liger-Kernel's cross-entropy applies grad_output after its kernel
for this reason.

Killed by: ``grad_agreement`` with ``--backward`` (any row whose g is not 1).

Minimal input: ``[[0.0]]`` -> g_0 = -2: expected dx = -2.0, got 1.0.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "grad_agreement"
FUNCTION = "lse_autograd"
BACKWARD = True

PATH = "reference/_lse_backward_kernel.py"
ANCHOR = "dx = g[:, None] * softmax"
REPLACEMENT = "dx = softmax"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[0.0]], device=device)
