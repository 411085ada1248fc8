"""Mutant: the kernel writes the shifted tile back into its input, using it as scratch space.

Patch: in ``_lse_kernel`` (reference/_lse_kernel.py), after folding each full tile, two added
lines read the tile again and store x - run_max over it; the answer it returns is right, the
caller's tensor is not. (The tail tile is left alone, as an unmasked scratch store would have to
be.)

Pitfall: fused softmax/cross-entropy kernels save memory by writing intermediates (or gradients)
over their input. A Triton ``tl.store`` does not bump PyTorch's version counter, so autograd
cannot notice that a tensor it saved for backward (the logits) was overwritten, and every later
reader of the input sees shifted values. An LSE is a pure reduction: its input must come back
bit for bit as it went in.

Documented: unslothai/unsloth#5002 (cross-entropy backward writes gradients into the logits in
place); linkedin/Liger-Kernel#1251 (``inplace=False``, "Triton writes don't bump PyTorch's tensor
version counter").

Killed by: ``input_unchanged`` (first to fire: it runs before agreement); ``determinism`` also
catches it (the second call sees the overwritten input).

Minimal input: one row of 16 ones (a full tile: 16 columns is the GPU policy's narrowest tile, and
a row narrower than its tile only takes the masked tail, which this patch leaves alone) -> the
result is right (1 + log 16 = 3.7726), but x holds 16 zeros afterwards.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "input_unchanged"

PATH = "reference/_lse_kernel.py"
ANCHOR = "stride_col, BLOCK_N, INT64, False)\n"
REPLACEMENT = (
    "stride_col, BLOCK_N, INT64, False)\n"
    "        tile = row_ptrs + _cols(start, BLOCK_N, INT64)[None, :] * stride_col\n"
    "        tl.store(tile, (tl.load(tile) - run_max[:, None]).to(x_ptr.dtype.element_ty))\n"
)


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.ones(1, 16, device=device)
