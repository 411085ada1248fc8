"""Mutant: the column stride is assumed to be 1.

Patch: the launcher (``_run_kernels`` in reference/_lse_kernel.py) passes ``1`` to the kernel
instead of ``x.stride(1)``, so every load indexes columns as consecutive storage elements.

Pitfall: the Triton softmax tutorial passes only the row stride, because its rows are contiguous;
a kernel copied from it and called on a transposed tensor (``x.t()``, column-major activations),
a strided slice (``x[:, ::2]``) or an expanded view reads consecutive storage elements instead of
the row's. ``x.stride(1)`` is 1 only for row-contiguous layouts; calling ``.contiguous()`` in the
launcher would hide the cost, passing the stride is the fix.

Documented: Triton tutorial 02-fused-softmax (only ``input_row_stride`` is passed); PyTorch docs
of ``torch.Tensor.stride`` and ``torch.Tensor.t``.

Killed by: ``agreement`` on transposed and column_step layouts; ``row_independence`` also catches
it when a row is passed alone as a contiguous copy.

Minimal input: ``[[0., 2.], [1., 3.]].t()`` = ``[[0., 1.], [2., 3.]]`` with strides (1, 2) ->
expected lse(0, 1) = 1.3133 for row 0, got lse(0, 2) = 2.1269 (storage elements 0 and 1).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "x.stride(0), x.stride(1), cfg.cols_per_split"
REPLACEMENT = "x.stride(0), 1, cfg.cols_per_split"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[0.0, 2.0], [1.0, 3.0]], device=device).t()
