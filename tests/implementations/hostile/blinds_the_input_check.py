"""Hostile: makes every tensor comparison in its process say "equal" (the worker compared the input
after the call with ``torch.equal``), then halves its input in place. In process, or with the
input's memory compared by the grader, ``input_unchanged`` fails; compared by the worker, the
change went unseen and the candidate passed."""

import torch

torch.equal = lambda a, b: True
torch.Tensor.equal = lambda self, other: True


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
    x.mul_(0.5)
    return out
