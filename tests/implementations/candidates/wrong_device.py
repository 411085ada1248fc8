"""Right shape and dtype, on the wrong device (meta)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32).to("meta")
