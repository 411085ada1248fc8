"""Returns shape (M, 1) (keepdim=True) instead of (M,)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x.to(torch.float64), dim=1, keepdim=True).to(torch.float32)
