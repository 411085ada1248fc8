"""Correct, but prints 300 MiB on its first call: more than the worker's output-file-size limit
(RLIMIT_FSIZE), so a write to its captured stdout fails (EFBIG; SIGXFSZ where it is not ignored).
Stopped by a resource limit: a crash that names the limit, not a failure of a check."""

import sys

import torch

PRINTED = 300 << 20


def lse(x: torch.Tensor) -> torch.Tensor:
    line = "x" * ((1 << 20) - 1) + "\n"
    for _ in range(PRINTED >> 20):
        sys.stdout.write(line)
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
