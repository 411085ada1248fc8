"""Writes the answers over column 0 of its input and returns that column: the output shares the
input's memory (output_contract)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    out = torch.logsumexp(x.to(torch.float64), dim=1).to(x.dtype)
    if x.shape[1] == 0:
        return out
    column = x[:, 0]
    column.copy_(out)
    return column
