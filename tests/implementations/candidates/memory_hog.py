"""Asks for 8 GiB more scratch memory than its address-space limit on every call (an out-of-memory
under any limit: the worker's address space is what it maps already, the limit, and the room the
fuzzer keeps for its own inputs, 18 GiB), 32 GiB where it has no limit."""

import resource

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    scratch = torch.empty(32 << 30 if soft == resource.RLIM_INFINITY else soft + (8 << 30), dtype=torch.uint8)
    del scratch
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
