"""Buggy backward, correct forward: the upstream gradient not applied: dx = softmax(x), the chain rule's g forgotten."""

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
        return torch.exp(x.float() - out[:, None]).to(x.dtype)


def lse(x):
    return _Lse.apply(x)
