"""Attention-state merges in plain torch: one correct, the others each with one documented bug.

``merge(v_a, s_a, v_b, s_b) -> (v, s)``: v (T, H, D) in v_a's dtype, s (T, H) float32, natural-log
LSEs. They compute in float32 as a kernel would.
"""

from __future__ import annotations

import math

import torch

LOG2E = 1 / math.log(2)


def _out(v: torch.Tensor, s: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return v.to(like.dtype), s.to(torch.float32)


def correct(v_a, s_a, v_b, s_b):
    """Max-shifted weights, both empty states guarded: (0, -inf)."""
    m = torch.maximum(s_a, s_b)
    safe = torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)
    e_a, e_b = torch.exp(s_a - safe), torch.exp(s_b - safe)
    total = e_a + e_b
    s = torch.where(total > 0, safe + torch.log(total), torch.full_like(m, -math.inf))
    w_a = torch.where(total > 0, e_a / total, torch.zeros_like(total))
    w_b = torch.where(total > 0, e_b / total, torch.zeros_like(total))
    return _out(w_a[..., None] * v_a.float() + w_b[..., None] * v_b.float(), s, v_a)


def no_empty_guard(v_a, s_a, v_b, s_b):
    """exp(s_x - s) with s = logaddexp: two empty states give -inf - -inf = NaN (vLLM PR 39148)."""
    s = torch.logaddexp(s_a, s_b)
    v = torch.exp(s_a - s)[..., None] * v_a.float() + torch.exp(s_b - s)[..., None] * v_b.float()
    return _out(v, s, v_a)


def finite_sentinel(v_a, s_a, v_b, s_b):
    """Empty states clamped to -1e30 before merging: two empty states come back with a finite LSE."""
    return correct(v_a, s_a.clamp(min=-1e30), v_b, s_b.clamp(min=-1e30))


def exp2_on_natural_logs(v_a, s_a, v_b, s_b):
    """Weights 2^(s_x - s) on natural-log LSEs: a base-2 merge fed natural logs (vLLM PR 52796)."""
    s = torch.logaddexp(s_a, s_b)
    v = torch.exp2(s_a - s)[..., None] * v_a.float() + torch.exp2(s_b - s)[..., None] * v_b.float()
    return _out(torch.nan_to_num(v), s, v_a)


def lse_read_as_contiguous(v_a, s_a, v_b, s_b):
    """Reads the LSE tensors as if contiguous, whatever their strides (vLLM PR 22003)."""
    def flat(s):
        return s.as_strided(s.shape, (s.shape[1], 1)) if s.numel() else s
    return correct(v_a, flat(s_a), v_b, flat(s_b))


def a_is_the_max(v_a, s_a, v_b, s_b):
    """Takes s_a as the max instead of max(s_a, s_b): exp(s_b - s_a) overflows when b is far larger."""
    e_b = torch.exp(s_b - s_a)
    s = s_a + torch.log1p(e_b)
    w_b = e_b / (1 + e_b)
    return _out((1 - w_b)[..., None] * v_a.float() + w_b[..., None] * v_b.float(), s, v_a)


def empty_lse_as_zero(v_a, s_a, v_b, s_b):
    """nan_to_num on the LSEs: an empty state (-inf) is read as an LSE of 0, a state of weight 1."""
    return correct(v_a, torch.nan_to_num(s_a, neginf=0.0), v_b, torch.nan_to_num(s_b, neginf=0.0))


def no_max_shift(v_a, s_a, v_b, s_b):
    """log(exp(s_a) + exp(s_b)) without the max: exp overflows float32 once an LSE passes 88.7."""
    e_a, e_b = torch.exp(s_a), torch.exp(s_b)
    s = torch.log(e_a + e_b)
    return _out((e_a / (e_a + e_b))[..., None] * v_a.float() + (e_b / (e_a + e_b))[..., None] * v_b.float(), s, v_a)


def writes_v_a(v_a, s_a, v_b, s_b):
    """Right answer, then zeroes v_a in place (scratch reuse)."""
    out = correct(v_a, s_a, v_b, s_b)
    v_a.zero_()
    return out


def returns_one_tensor(v_a, s_a, v_b, s_b):
    """Returns v alone, not the pair (v, s)."""
    return correct(v_a, s_a, v_b, s_b)[0]
