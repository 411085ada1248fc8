"""Mutant: NaN is treated as a masked lane, so a row holding NaN gets a finite result.

Patch: ``_load`` (reference/_lse_kernel.py) replaces NaN lanes by -inf as it loads them
(``tl.where(x == x, x, -float("inf"))``), the same sentinel as padding: the NaN is dropped from
both the max and the sum.

Pitfall: NaN must win. Triton's ``tl.max``/``tl.maximum`` ignore NaN in compiled code ("nan
ignore" reductions, unlike torch.max), so a kernel that takes its max from them and then guards
its exp against non-finite lanes, or one that scrubs NaN to keep a row "clean", returns a finite
number for a row whose true log-sum-exp is NaN, and a NaN that should have surfaced upstream goes
on silently. torch.logsumexp returns NaN for any row containing NaN.

Documented: triton-lang/triton#1566 and #10291 (NaN semantics of tl.maximum and tl.max/argmax,
which ignore NaN in compiled code); triton-lang/triton#2776 (propagate_nan option);
rusty1s/pytorch_scatter#369 ("Fix NaN treatment in logsumexp").

Killed by: ``agreement`` (rows of recipe nan); no other check sees it, because a metamorphic pair
of NaN rows is consistent with itself.

Minimal input: ``[[nan, 0.0]]`` -> expected NaN, got 0.0.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "    return x.to(dtype)"
REPLACEMENT = (
    "    x = x.to(dtype)\n"
    '    return tl.where(x == x, x, -float("inf"))'
)


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[float("nan"), 0.0]], device=device)
