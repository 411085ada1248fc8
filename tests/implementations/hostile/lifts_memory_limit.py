"""Raises its own address-space limit to the hard limit, then asks for 21 GiB on every call: with only
the soft limit set, the memory limit would be a suggestion the candidate can take back. (21 GiB: more
than a worker under a 1 GiB limit may map, 1 GiB plus the 18 GiB kept for the fuzzer's inputs, and
less than the kernel's overcommit check refuses outright on a 24 GiB machine.)"""

import resource

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    except (ValueError, OSError):
        pass  # the limit is hard: it stays
    scratch = torch.empty(21 << 30, dtype=torch.uint8)
    del scratch
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
