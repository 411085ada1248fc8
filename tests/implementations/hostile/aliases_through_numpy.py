"""Hostile: writes its answers into the input's last column and returns that column re-wrapped
through numpy: a tensor of a new storage object that starts past the input's first byte. In
process ``output_contract`` sees the shared memory; a worker that compared storage identity
shipped it back as a fresh tensor."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    out = torch.logsumexp(x.to(torch.float64), dim=1).to(x.dtype)
    if x.shape[1] < 2 or x.dtype == torch.bfloat16:  # numpy has no bfloat16
        return out.float()
    column = x[:, -1]
    column.copy_(out)
    return torch.from_numpy(column.numpy())
