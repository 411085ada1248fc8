"""A merge as a reduction over a stacked split dim with torch.logsumexp: how a PyTorch-only code
base merges states (the weights come from the softmax of the stacked LSEs). Natural-log LSEs."""

import torch


def merge_state(v_a, s_a, v_b, s_b):
    lses = torch.stack([s_a, s_b]).float()
    s = torch.logsumexp(lses, dim=0)
    # softmax over the stack is NaN where every LSE is -inf: no keys at all, so no weight at all.
    weights = torch.nan_to_num(torch.softmax(lses, dim=0), nan=0.0)
    v = (weights[..., None] * torch.stack([v_a, v_b]).float()).sum(dim=0)
    return v.to(v_a.dtype), s
