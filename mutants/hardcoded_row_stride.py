"""Mutant: the row offset is computed as ``row * N`` instead of ``row * stride_row``.

Patch: ``row_ptrs = x_ptr + safe_rows[:, None] * N`` in ``_lse_kernel``
(reference/_lse_kernel.py): the row stride passed by the host is ignored.

Pitfall: ``row * N`` is right for a contiguous (M, N) tensor, which is what most tests build. A
padded row stride (a slice ``x[:, :N]`` of a wider buffer, an aligned allocation), a transposed
view or a row-strided view puts row i at ``i * x.stride(0)``, and the kernel then reads padding or
other rows. The fix is to pass ``x.stride(0)`` from the host, as the Triton softmax tutorial does.

Documented: V. Guerra, "Triton: Row-Wise LogSumExp", pitfalls ("hardcoding the row stride");
Triton tutorial 02-fused-softmax (``input_row_stride`` argument).

Killed by: ``agreement`` on padded, transposed or column-step layouts (the fuzzer fills padding
with NaN, so a row reading it comes out NaN); ``row_independence`` also catches it when the row is
passed alone as a contiguous copy, and ``shift_invariance`` when an example's plan runs it first
(its call on x + c is judged against the reference too: on an H100 on 2026-12-06 it killed it).

Minimal input: rows ``[0.0]`` and ``[1.0]`` at row stride 2 (``[[0., 5.], [1., 5.]][:, :1]``) ->
expected ``[0.0, 1.0]``, got ``[0.0, 5.0]`` (row 1 read from offset 1, the padding).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "safe_rows[:, None] * stride_row"
REPLACEMENT = "safe_rows[:, None] * N"


def minimal_input(device: torch.device) -> torch.Tensor:
    # Built on the device, then sliced: moving a non-dense view to another device would make it
    # contiguous and drop the padding that exposes the bug.
    return torch.tensor([[0.0, 5.0], [1.0, 5.0]], device=device)[:, :1]
