"""Backward mutant: the backward reads x with the row stride of a contiguous tensor (N).

Patch: in ``_lse_backward_kernel`` (reference/_lse_backward_kernel.py) the load of x uses
``rows * N`` in place of ``rows * stride_row``.

Pitfall: the forward is tested on padded and sliced inputs, the backward only on the contiguous
tensors a unit test makes; but autograd hands the backward the very view the forward saw (a slice
of a larger buffer, a transposed or padded activation), and a backward that assumes contiguity
reads other rows' values into each row's softmax.

Documented: V. Guerra, "Triton: Row-Wise LogSumExp", pitfalls (strides must be passed, not
assumed); the same pitfall as the forward's ``hardcoded_row_stride``.

Killed by: ``grad_agreement`` with ``--backward`` (a row-strided input: padded rows, a column slice).

Minimal input: ``[[0.0, 1.0, 5.0], [2.0, 3.0, 5.0]][:, :2]`` (row stride 3) -> row 1 reads [5.0, 2.0].
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "grad_agreement"
FUNCTION = "lse_autograd"
BACKWARD = True

PATH = "reference/_lse_backward_kernel.py"
ANCHOR = "x = tl.load(x_ptr + rows[:, None] * stride_row + cols[None, :] * stride_col, mask=mask, other=0.0)"
REPLACEMENT = "x = tl.load(x_ptr + rows[:, None] * N + cols[None, :] * stride_col, mask=mask, other=0.0)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[0.0, 1.0, 5.0], [2.0, 3.0, 5.0]], device=device)[:, :2]
