"""The gate's deliberately broken implementation: a suite that passes it cannot score mutants.

``lse_plus_one`` is the correct kernel's answer plus one, on every row (finite rows move, -inf,
+inf and NaN stay what they are). Any suite worth running catches it on its first finite example.
"""

from __future__ import annotations

import torch


def lse_plus_one(x: torch.Tensor) -> torch.Tensor:
    import reference

    return reference.lse(x) + 1.0
