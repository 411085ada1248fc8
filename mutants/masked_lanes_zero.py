"""Mutant: masked lanes of the tail tile load 0.0 instead of -inf.

Patch: the tail tile's loads (``_load`` in reference/_lse_kernel.py, masked when called from the
tail) take ``other=0.0`` instead of ``other=-float("inf")``; the lanes past the end of the row then
hold 0.0.

Pitfall: ``other=`` is the value a masked lane takes, and it does double duty: it must lose every
max comparison and contribute exp(-inf) = 0 to the sum. With 0.0 each masked lane adds exp(0 - m)
to the sum (1 for a row whose max is 0), and for a row whose entries are all below 0 it becomes
the max itself. Rows whose length is a multiple of the tile width have no masked lanes, so the
bug hides on power-of-two test shapes.

Documented: Triton tutorial 02-fused-softmax (the row is loaded with ``other=-float('inf')``, "so
that it does not affect the max"); V. Guerra, "Triton: Row-Wise LogSumExp", pitfalls ("masked
lanes with 0.0").

Killed by: ``agreement`` (first to fire); also ``bounds`` for rows below zero (the result exceeds
max + log N), and ``shift_invariance`` and ``fresh_values`` (a masked lane adds exp(0 - m), which
does not move with the row's values).

Minimal input: ``[[0.0, 0.0, 0.0]]`` (N = 3: a 4-wide tile with one masked lane) -> expected
log 3 = 1.0986, got log 4 = 1.3863.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = 'other=-float("inf")'
REPLACEMENT = "other=0.0"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.zeros(1, 3, device=device)
