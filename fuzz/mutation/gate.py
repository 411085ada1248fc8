"""The gate's deliberately broken implementation: a suite that passes it cannot score mutants.

``lse_plus_one`` is the correct kernel's answer plus one, on every row (finite rows move, -inf,
+inf and NaN stay what they are). Any suite worth running catches it on its first finite example.
It is loaded by TARGET (``fuzz.mutation.gate:lse_plus_one``) in a worker, like every candidate.
"""

from __future__ import annotations

import torch

import reference


def lse_plus_one(x: torch.Tensor) -> torch.Tensor:
    return reference.lse(x) + 1.0
