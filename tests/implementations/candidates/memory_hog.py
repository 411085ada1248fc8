"""Asks for 32 GiB of scratch memory on every call (an out-of-memory under a smaller limit: the worker's
address space is the limit plus the room the fuzzer keeps for its own inputs, 18 GiB)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    scratch = torch.empty(32 << 30, dtype=torch.uint8)
    del scratch
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
