"""Raises on every input with more than 4 columns."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    if x.shape[1] > 4:
        raise RuntimeError(f"row too long: {x.shape[1]} > 4")
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
