"""Patches its worker to answer with 64 MiB where an (M,) result holds a few bytes: a worker is the
candidate's process, so the grader must bound what it reads from one, not trust it to send less."""

import torch

import fuzz.isolation.worker.process as worker


def lse(x: torch.Tensor) -> torch.Tensor:
    worker._copied_bytes = lambda out: memoryview(bytearray(64 << 20))
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
