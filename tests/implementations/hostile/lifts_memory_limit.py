"""Raises its own address-space limit to the hard limit, then asks for 2 GiB more than that limit on
every call: with only the soft limit set, the memory limit would be a suggestion the candidate can
take back. (Its limit is what the worker maps already, torch and its libraries, plus 1 GiB, plus the
18 GiB kept for the fuzzer's inputs: about 20 GiB with a CPU build of torch, less than the kernel's
overcommit check refuses outright on a 24 GiB machine; the memory is never touched.)"""

import resource

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    except (ValueError, OSError):
        pass  # the limit is hard: it stays
    wanted = 21 << 30 if soft == resource.RLIM_INFINITY else soft + (2 << 30)
    scratch = torch.empty(wanted, dtype=torch.uint8)
    del scratch
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
