"""Kills every other process the fork server started: the drivers grading its neighbours (and its
own), the other candidates' workers. Returns a correct answer if it is still alive, which it is not."""

import os
import signal

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    server = os.getppid()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == server:
                os.kill(int(entry), signal.SIGKILL)
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
