"""Asks for 6 GiB of scratch memory on every call (an out-of-memory under a smaller limit)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    scratch = torch.empty(6 << 30, dtype=torch.uint8)
    del scratch
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
