"""Buggy backward, correct forward: the softmax as exp(x) / sum(exp(x)), without the max shift: it overflows past x = 88."""

import torch


class _Lse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.logsumexp(x.double(), dim=1).float()
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        e = torch.exp(x.float())
        return (grad[:, None] * e / e.sum(dim=1, keepdim=True)).to(x.dtype)


def lse(x):
    return _Lse.apply(x)
