"""Split-K combines in plain torch, as a decode path without a combine kernel writes them: one over
the stacked splits with torch.logsumexp and a NaN-safe softmax (natural logs), and one in float64 for
base-2 LSEs (``combine_base2``)."""

import math

import torch


def combine(v, s):
    s_out = torch.logsumexp(s.float(), dim=0)
    weights = torch.nan_to_num(torch.softmax(s.float(), dim=0), nan=0.0)
    # An empty split's v may hold anything (0/0 of a split with no keys): weight 0 must not read it.
    parts = torch.where(weights[..., None] > 0, v.float(), torch.zeros((), device=v.device))
    v_out = (weights[..., None] * parts).sum(dim=0)
    return v_out.to(v.dtype), s_out


def combine_base2(v, s):
    natural = s.double() * math.log(2)
    s_out = torch.logsumexp(natural, dim=0)
    weights = torch.nan_to_num(torch.softmax(natural, dim=0), nan=0.0)
    parts = torch.where(weights[..., None] > 0, v.double(), torch.zeros((), dtype=torch.float64, device=v.device))
    v_out = (weights[..., None] * parts).sum(dim=0)
    return v_out.to(v.dtype), (s_out / math.log(2)).float()
