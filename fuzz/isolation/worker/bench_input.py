"""The bandwidth benchmark's input, built the same in the worker and in the grader.

The benchmark (:mod:`fuzz.grading.bench`) times the candidate in its worker on an input the worker
builds on its own device, and the baselines in the grader on the same input, from the same seed.
It lives beside the worker, which must not import the grading layer above it; torch only, as the
worker imports it before the candidate (and before its device mode is set).
"""

from __future__ import annotations

import torch

__all__ = ["seeded_input"]


def seeded_input(rows: int, cols: int, dtype: torch.dtype, seed: int, device) -> torch.Tensor:
    """Standard normal values from a seeded generator on ``device``, drawn in float32 and cast
    once, so a worker and its parent build the same tensor."""
    generator = torch.Generator(device=device).manual_seed(int(seed))
    x = torch.randn(rows, cols, generator=generator, device=device, dtype=torch.float32)
    return x.to(dtype)
