"""Inputs of an attention-state merge: v_a, v_b (T, H, D) and their LSEs s_a, s_b (T, H).

Each (t, h) pair of states is drawn from one kind (:data:`STATE_KINDS`), so one call covers the
cases where merge kernels break: two empty states (s = -inf, the NaN of vLLM PR 39148), one empty
state (the identity), equal LSEs, LSEs far apart (a weight that underflows), magnitudes near 1e30
(where exp(s_a - s) loses the weight to the rounding of s) and ordinary ones. The LSE tensors are
laid out contiguous, transposed ((H, T) storage viewed as (T, H): the layout a kernel that reads
them as contiguous gets wrong, vLLM PR 22003) or strided; v contiguous, head-major or strided. D is
any size from 1, powers of two or not. Shrinking goes to one token, one head, D = 1, ordinary
states, contiguous float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

STATE_KINDS = ("ordinary", "equal", "a_empty", "b_empty", "both_empty", "far_apart", "huge")
"""Per (t, h): how its two LSEs relate. The first is where shrinking ends."""

LAYOUTS = ("contiguous", "transposed", "strided")
"""Of s_a and s_b (and, for v, "transposed" means head-major: (H, T, D) storage viewed as (T, H, D))."""

V_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class MergeInput:
    """One example: the four tensors, how they were drawn (for reports), and the LSE base."""

    v_a: torch.Tensor
    s_a: torch.Tensor
    v_b: torch.Tensor
    s_b: torch.Tensor
    kinds: tuple[str, ...]  # per (t, h), row-major
    layout: str
    base: str | int = "e"

    def describe(self) -> str:
        tokens, heads, dim = self.v_a.shape
        counts = {kind: self.kinds.count(kind) for kind in dict.fromkeys(self.kinds)}
        mix = ", ".join(f"{n} x {kind}" for kind, n in counts.items()) or "no states"
        return (f"v {str(self.v_a.dtype).replace('torch.', '')} ({tokens}, {heads}, {dim}), LSEs {self.layout}, "
                f"base {self.base}; states: {mix}")

    def named(self) -> dict[str, torch.Tensor]:
        """The call's tensors by parameter name, in call order: ``fn(*example.named().values())``."""
        return {"v_a": self.v_a, "s_a": self.s_a, "v_b": self.v_b, "s_b": self.s_b}

    def clone(self) -> MergeInput:
        """The same values in new tensors of the same layout (a call may not keep the inputs' storage)."""
        copies = [like(t) for t in (self.v_a, self.s_a, self.v_b, self.s_b)]
        return MergeInput(*copies, kinds=self.kinds, layout=self.layout, base=self.base)


def like(t: torch.Tensor) -> torch.Tensor:
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    return out.copy_(t)


def _lse_pair(kind: str, centre: float, gap: float) -> tuple[float, float]:
    if kind == "equal":
        return centre, centre
    if kind == "a_empty":
        return -math.inf, centre
    if kind == "b_empty":
        return centre, -math.inf
    if kind == "both_empty":
        return -math.inf, -math.inf
    if kind == "far_apart":
        return centre, centre - 100.0 - abs(gap) * 50
    if kind == "huge":
        return 1e30 * (1 + gap / 100), 1e30
    return centre, centre + gap


def _laid_out(values: torch.Tensor, layout: str) -> torch.Tensor:
    """``values`` (T, H) or (T, H, D) in ``layout``: a view of a storage of that arrangement."""
    if layout == "transposed":
        return values.transpose(0, 1).contiguous().transpose(0, 1)
    if layout == "strided":
        wide = torch.zeros((values.shape[0], values.shape[1] * 2, *values.shape[2:]), dtype=values.dtype,
                           device=values.device)
        wide[:, ::2] = values
        return wide[:, ::2]
    return values.contiguous()


@st.composite
def merge_inputs(draw: st.DrawFn, *, dtypes: tuple[torch.dtype, ...] = V_DTYPES, max_tokens: int = 9,
                 max_heads: int = 5, max_dim: int = 160, base: str | int = "e",
                 device: str | torch.device = "cpu", layouts: tuple[str, ...] = LAYOUTS) -> MergeInput:
    """A :class:`MergeInput`: T of 0 to ``max_tokens``, H of 1 to ``max_heads``, D of 1 to ``max_dim``,
    laid out as one of ``layouts`` (:data:`LAYOUTS`)."""
    tokens = draw(st.integers(0, max_tokens))
    heads = draw(st.integers(1, max_heads))
    sizes = [d for d in (16, 64, 100, 128) if d < max_dim] + [max_dim]
    dim = draw(st.one_of(st.integers(1, min(8, max_dim)), st.sampled_from(sizes)))
    dtype = draw(st.sampled_from(dtypes))
    layout = draw(st.sampled_from(layouts))
    seed = draw(st.integers(0, 2**16))
    kinds = tuple(draw(st.lists(st.sampled_from(STATE_KINDS), min_size=tokens * heads, max_size=tokens * heads)))
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn(tokens * heads, generator=gen) * 8
    gaps = torch.randn(tokens * heads, generator=gen) * 3
    pairs = [_lse_pair(kind, float(c), float(g)) for kind, c, g in zip(kinds, centres, gaps)]
    s_a = torch.tensor([a for a, _ in pairs], dtype=torch.float32).reshape(tokens, heads)
    s_b = torch.tensor([b for _, b in pairs], dtype=torch.float32).reshape(tokens, heads)
    v_a, v_b = (torch.randn(tokens, heads, dim, generator=gen).to(dtype) for _ in range(2))
    tensors = [_laid_out(t.to(device), layout) for t in (v_a, s_a, v_b, s_b)]
    return MergeInput(*tensors, kinds=kinds, layout=layout, base=base)
