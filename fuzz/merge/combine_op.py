"""``--op combine``: the pieces :mod:`fuzz.merge.ops` declares for it (checks, inputs, probe)."""

from __future__ import annotations

import torch

from .combine_checks import COMBINE_CHECKS as CHECKS
from .combine_checks import run_combine_checks as run_checks
from .combine_strategies import CombineInput, combine_inputs
from .strategies import LAYOUTS, V_DTYPES

__all__ = ["CHECKS", "expected_outputs", "input_type", "inputs", "probe_input", "run_checks"]

input_type = CombineInput


def inputs(*, dtypes: tuple[torch.dtype, ...] = V_DTYPES, base: str | int = "e", device: torch.device | str = "cpu",
           layouts: tuple[str, ...] = LAYOUTS):
    return combine_inputs(dtypes=dtypes, base=base, device=device, layouts=layouts)


def probe_input(device: torch.device | str, base: str | int) -> CombineInput:
    """Three ordinary splits, T = 2, H = 3, D = 8, float32, contiguous."""
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(3, 2, 3, 8, generator=gen).to(device)
    s = torch.randn(3, 2, 3, generator=gen).to(device)
    return CombineInput(v, s, kinds=("ordinary",) * 6, layout="contiguous", base=base)


def expected_outputs(example: CombineInput) -> tuple[tuple[tuple[int, ...], torch.dtype], ...]:
    """(shape, dtype) of v_out and s_out."""
    _, tokens, heads, dim = example.v.shape
    return ((tokens, heads, dim), example.v.dtype), ((tokens, heads), torch.float32)
