"""A merge computed in float64 and rounded once: the answer as exact as a kernel can return it.

Natural-log LSEs (``--lse-base e``). Two empty states give (0, -inf); one empty state is the other.
"""

import torch


def merge_state(v_a, s_a, v_b, s_b):
    a, b = s_a.double(), s_b.double()
    s = torch.logaddexp(a, b)
    empty = torch.isneginf(s)
    safe = torch.where(empty, torch.zeros_like(s), s)
    w_a = torch.where(torch.isneginf(a), torch.zeros_like(a), torch.exp(a - safe))
    w_b = torch.where(torch.isneginf(b), torch.zeros_like(b), torch.exp(b - safe))
    v = w_a[..., None] * v_a.double() + w_b[..., None] * v_b.double()
    return v.to(v_a.dtype), s.float()
