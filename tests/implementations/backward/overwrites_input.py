"""Buggy backward, correct forward: the gradient written into the saved input's memory (a buffer saved, reused)."""

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
        x.copy_((grad[:, None] * torch.exp(x.float() - out[:, None])).to(x.dtype))
        return x


def lse(x):
    return _Lse.apply(x)
