"""``--op merge_state``: the pieces :mod:`fuzz.merge.ops` declares for it (checks, inputs, probe)."""

from __future__ import annotations

import torch

from .checks import MERGE_CHECKS as CHECKS
from .checks import run_merge_checks as run_checks
from .strategies import LAYOUTS, V_DTYPES, MergeInput, merge_inputs

input_type = MergeInput

__all__ = ["CHECKS", "expected_outputs", "input_type", "inputs", "probe_input", "run_checks"]


def inputs(*, dtypes: tuple[torch.dtype, ...] = V_DTYPES, base: str | int = "e", device: torch.device | str = "cpu",
           layouts: tuple[str, ...] = LAYOUTS):
    return merge_inputs(dtypes=dtypes, base=base, device=device, layouts=layouts)


def probe_input(device: torch.device | str, base: str | int) -> MergeInput:
    """Two ordinary states, T = 2, H = 3, D = 8, float32, contiguous."""
    gen = torch.Generator().manual_seed(0)
    v_a, v_b = (torch.randn(2, 3, 8, generator=gen).to(device) for _ in range(2))
    s_a, s_b = (torch.randn(2, 3, generator=gen).to(device) for _ in range(2))
    return MergeInput(v_a, s_a, v_b, s_b, kinds=("ordinary",) * 6, layout="contiguous", base=base)


def expected_outputs(example: MergeInput) -> tuple[tuple[tuple[int, ...], torch.dtype], ...]:
    """(shape, dtype) of v and s."""
    tokens, heads, _ = example.v_a.shape
    return (tuple(example.v_a.shape), example.v_a.dtype), ((tokens, heads), torch.float32)
