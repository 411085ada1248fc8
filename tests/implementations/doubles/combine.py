"""Split-K combines in plain torch: one correct, the others each with one documented bug.

``combine(v, s) -> (v_out, s_out)``: v (S, T, H, D), s (S, T, H) natural-log LSEs; v_out (T, H, D)
in v's dtype, s_out (T, H) float32. They compute in float32 as a kernel would.
"""

from __future__ import annotations

import math

import torch

INF = math.inf


def _out(v: torch.Tensor, s: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return v.to(like.dtype), s.to(torch.float32)


def _combine(v, s, *, exp=torch.exp, renormalize=True):
    """The correct combine, with the exp and the renormalization as options for the broken ones."""
    s = s.float()
    nan = torch.isnan(s).any(dim=0)
    row_max = torch.where(torch.isnan(s), -INF, s).amax(dim=0)
    shift = torch.where(row_max == -INF, torch.zeros_like(row_max), row_max)  # all empty: no finite max
    e = exp(s - shift)
    total = e.sum(dim=0)
    lse = torch.where(total > 0, shift + torch.log(total), torch.full_like(total, -INF))
    weights = e / torch.where(total > 0, total, torch.ones_like(total)) if renormalize else e
    terms = torch.where((s == -INF)[..., None], 0.0, weights[..., None] * v.float())  # an empty split's v unread
    v_out = torch.where(nan[..., None], math.nan, terms.sum(dim=0))
    return _out(v_out, torch.where(nan, math.nan, lse), v)


def correct(v, s):
    """Max-shifted, renormalized weights; empty splits skipped, all empty guarded: (0, -inf)."""
    return _combine(v, s)


def no_empty_guard(v, s):
    """exp(s_k - s_out) with s_out = logsumexp: all splits empty give -inf - -inf = NaN (vLLM PR 39148)."""
    lse = torch.logsumexp(s.float(), dim=0)
    v_out = (torch.exp(s.float() - lse)[..., None] * v.float()).sum(dim=0)
    return _out(v_out, lse, v)


def finite_sentinel(v, s):
    """Empty splits clamped to -1e30 before combining: all splits empty come back with a finite LSE."""
    return correct(v, s.clamp(min=-1e30))


def exp2_on_natural_logs(v, s):
    """Weights 2^(s_k - m) on natural-log LSEs: a base-2 combine fed natural logs (vLLM PR 52796)."""
    return _combine(v, s, exp=torch.exp2)


def not_renormalized(v, s):
    """v_out = sum_k exp(s_k - m) v_k, never divided by the sum: up to S times too large."""
    return _combine(v, s, renormalize=False)


def lse_read_as_contiguous(v, s):
    """Reads the LSE tensor as if contiguous, whatever its strides (vLLM PR 22003)."""
    splits, tokens, heads = s.shape
    flat = s.as_strided(s.shape, (tokens * heads, heads, 1)) if s.numel() else s
    return correct(v, flat)


def first_16_splits(v, s):
    """Combines the first 16 splits only (a fixed-size buffer of splits): wrong for S > 16."""
    return correct(v[:16], s[:16])


def first_split_as_max(v, s):
    """Takes s_0 as the max instead of max_k s_k: exp(s_k - s_0) overflows when a later split is far larger."""
    s32 = s.float()
    e = torch.exp(s32 - s32[0])
    total = e.sum(dim=0)
    terms = torch.where((s32 == -INF)[..., None], 0.0, (e / total)[..., None] * v.float())
    return _out(terms.sum(dim=0), s32[0] + torch.log(total), v)


def zero_weight_times_v(v, s):
    """An empty split's weight 0 multiplies its v: the NaN a split with no keys leaves there leaks."""
    s32 = s.float()
    row_max = s32.amax(dim=0)
    shift = torch.where(row_max == -INF, torch.zeros_like(row_max), row_max)
    e = torch.exp(s32 - shift)
    total = e.sum(dim=0)
    safe = torch.where(total > 0, total, torch.ones_like(total))
    lse = torch.where(total > 0, shift + torch.log(total), torch.full_like(total, -INF))
    return _out(((e / safe)[..., None] * v.float()).sum(dim=0), lse, v)


def no_max_shift(v, s):
    """log(sum_k exp(s_k)) without the max: exp overflows float32 once an LSE passes 88.7."""
    e = torch.exp(s.float())
    total = e.sum(dim=0)
    terms = torch.where((s == -INF)[..., None], 0.0, (e / total)[..., None] * v.float())
    return _out(terms.sum(dim=0), torch.log(total), v)


def writes_v(v, s):
    """Right answer, then zeroes v in place (scratch reuse)."""
    out = correct(v, s)
    v.zero_()
    return out


def returns_one_tensor(v, s):
    """Returns v_out alone, not the pair (v_out, s_out)."""
    return correct(v, s)[0]


def v_out_in_float32(v, s):
    """Returns v_out in the float32 it was computed in, not in v's dtype."""
    v_out, s_out = correct(v, s)
    return v_out.float(), s_out
