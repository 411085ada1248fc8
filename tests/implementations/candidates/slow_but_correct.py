"""Right answers, but its first call sleeps 1.5 s (a slow start, say a long compile). Slow is a
finding, not a failure, and not a hang: with --call-timeout 1 that call passes the first deadline
and answers well before the second (at least twice the first)."""

import time

import torch

_started = False


def lse(x: torch.Tensor) -> torch.Tensor:
    global _started
    if not _started:
        _started = True
        time.sleep(1.5)
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
