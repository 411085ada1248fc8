"""Inputs of a split-K combine (flash-decoding's second step): v (S, T, H, D) and its LSEs s (S, T, H).

Each (t, h) draws one kind (:data:`COMBINE_KINDS`) for how its S splits' LSEs relate, so one call
covers the cases where combine kernels break: some splits empty (s = -inf, with NaN in their v, the
0/0 a split with no keys may leave: it must never reach the sum), every split empty (the NaN of vLLM
PR 39148 when unguarded), equal LSEs, one split far above the rest (weights that underflow),
magnitudes near 1e30 (where exp(s_k - s_out) loses the weight to the rounding of s_out) and ordinary
ones. S runs from 1 to 64 (small most of the time; 16, 33 and 64 are where a kernel's step over the
splits ends or leaves a tail). s and v share a layout: contiguous, transposed ((S, H, T) storage
viewed as (S, T, H), and v head-major: the layout a kernel that reads them as contiguous gets
wrong, vLLM PR 22003) or strided. D is any size from 1. Shrinking goes to one split, one token,
one head, D = 1, ordinary states, contiguous float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from reference.merge_oracle import check_base

from ..validate import integer
from .strategies import LAYOUTS, V_DTYPES, like

COMBINE_KINDS = ("ordinary", "equal", "some_empty", "all_empty", "far_apart", "huge")
"""Per (t, h): how its S splits' LSEs relate. The first is where shrinking ends."""

MAX_SPLITS = 64
"""The most splits the combine contract covers (the oracle and reference.combine take any S)."""

_SPLIT_COUNTS = (16, 33, 64)  # a power of two, one past a multiple of 16 and 32, and the contract's most
FAR_GAP = 100.0  # far_apart: every other split lies more than this below the dominant one


@dataclass(frozen=True)
class CombineInput:
    """One example: the two tensors, how they were drawn (for reports), and the LSE base."""

    v: torch.Tensor
    s: torch.Tensor
    kinds: tuple[str, ...]  # per (t, h), row-major
    layout: str
    base: str | int = "e"

    def describe(self) -> str:
        splits, tokens, heads, dim = self.v.shape
        counts = {kind: self.kinds.count(kind) for kind in dict.fromkeys(self.kinds)}
        mix = ", ".join(f"{n} x {kind}" for kind, n in counts.items()) or "no states"
        return (f"v {str(self.v.dtype).replace('torch.', '')} ({splits}, {tokens}, {heads}, {dim}): {splits} "
                f"split{'' if splits == 1 else 's'}, LSEs {self.layout}, base {self.base}; states: {mix}")

    def named(self) -> dict[str, torch.Tensor]:
        """The call's tensors by parameter name, in call order: ``fn(*example.named().values())``."""
        return {"v": self.v, "s": self.s}

    def clone(self) -> CombineInput:
        """The same values in new tensors of the same layout (a call may not keep the inputs' storage)."""
        return CombineInput(like(self.v), like(self.s), kinds=self.kinds, layout=self.layout, base=self.base)


def laid_out(values: torch.Tensor, layout: str) -> torch.Tensor:
    """``values`` (S, T, H) or (S, T, H, D) in ``layout``: a view of a storage of that arrangement.

    The split dim stays outermost; "transposed" swaps T and H in storage, "strided" leaves every
    other head unused. Any other name gives a contiguous tensor.
    """
    if layout == "transposed":
        return values.transpose(1, 2).contiguous().transpose(1, 2)
    if layout == "strided":
        splits, tokens, heads, *rest = values.shape
        wide = torch.zeros((splits, tokens, heads * 2, *rest), dtype=values.dtype, device=values.device)
        wide[:, :, ::2] = values
        return wide[:, :, ::2]
    return values.contiguous()


def _split_lses(kinds: tuple[str, ...], splits: int, gen: torch.Generator) -> torch.Tensor:
    """(S, N) float32 LSEs, column n of kind ``kinds[n]``; built for every kind at once, then picked."""
    rows = len(kinds)
    centre = torch.randn(rows, generator=gen) * 8
    gaps = torch.randn(splits, rows, generator=gen) * 3
    chosen = torch.randint(0, splits, (rows,), generator=gen)  # the dominant (far_apart) or kept (some_empty) split
    is_chosen = torch.arange(splits)[:, None] == chosen[None, :]
    coin = torch.rand(splits, rows, generator=gen) < 0.5
    empty = torch.full((splits, rows), -math.inf)
    by_kind = {
        "ordinary": centre + gaps,
        "equal": centre.expand(splits, rows),
        "some_empty": torch.where(coin & ~is_chosen, empty, centre + gaps),
        "all_empty": empty,
        "far_apart": torch.where(is_chosen, centre, centre - FAR_GAP - 1.0 - gaps.abs() * 50),
        # Ties at exactly 1e30 among the rest: exp(s_k - s_out) gives each of them weight 1 there.
        "huge": torch.where(coin, torch.full((splits, rows), 1e30), 1e30 * (1 - gaps.abs() / 100)),
    }
    columns = [by_kind[kind][:, n] for n, kind in enumerate(kinds)]
    return torch.stack(columns, dim=1) if columns else torch.empty(splits, 0)


@st.composite
def combine_inputs(draw: st.DrawFn, *, dtypes: tuple[torch.dtype, ...] = V_DTYPES, max_splits: int = MAX_SPLITS,
                   max_tokens: int = 6, max_heads: int = 4, max_dim: int = 160, base: str | int = "e",
                   device: str | torch.device = "cpu", layouts: tuple[str, ...] = LAYOUTS) -> CombineInput:
    """A :class:`CombineInput`: S of 1 to ``max_splits``, T of 0 to ``max_tokens``, H of 1 to
    ``max_heads``, D of 1 to ``max_dim``, laid out as one of ``layouts``; the tensors are built on ``device``."""
    for name, value, low in (("max_splits", max_splits, 1), ("max_tokens", max_tokens, 0),
                             ("max_heads", max_heads, 1), ("max_dim", max_dim, 1)):
        integer(value, name=name, low=low)
    base = check_base(base)
    many = draw(st.integers(0, 3)) == 3  # a quarter of the draws; shrinks to few
    splits = min(draw(st.sampled_from(_SPLIT_COUNTS) if many else st.integers(1, 8)), max_splits)
    tokens = draw(st.integers(0, max_tokens))
    heads = draw(st.integers(1, max_heads))
    dim = min(draw(st.one_of(st.integers(1, 8), st.sampled_from([16, 64, 100, 128, max_dim]))), max_dim)
    dtype = draw(st.sampled_from(dtypes))
    layout = draw(st.sampled_from(layouts))
    seed = draw(st.integers(0, 2**16))
    kinds = tuple(draw(st.lists(st.sampled_from(COMBINE_KINDS), min_size=tokens * heads, max_size=tokens * heads)))
    gen = torch.Generator().manual_seed(seed)
    s = _split_lses(kinds, splits, gen).reshape(splits, tokens, heads)
    v = torch.randn(splits, tokens, heads, dim, generator=gen)
    v = torch.where((s == -math.inf)[..., None], math.nan, v).to(dtype)  # an empty split's 0/0
    return CombineInput(laid_out(v.to(device), layout), laid_out(s.to(device), layout), kinds=kinds, layout=layout,
                        base=base)
