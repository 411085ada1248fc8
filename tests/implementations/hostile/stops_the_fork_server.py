"""Stops (SIGSTOP) the process its worker was forked from, the fork server every driver and worker
of the run comes from, on its first call, then answers correctly: a driver that waits on the
stopped fork server (to start a worker, or to learn how one ended) would wait as long as it stays
stopped."""

import os
import signal

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    os.kill(os.getppid(), signal.SIGSTOP)
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
