"""Sends SIGTERM, then SIGINT, to the grader, found by walking up the parent chain from its worker
(worker, fork server, grader) to the first process whose command line names ``grade`` or
``check``: what a user's Ctrl-C or a ``kill`` would send. Before the grader told senders apart,
the batch ended as interrupted after it and resuming hit it again. Then answers correctly."""

import os
import signal
import time

import torch

SENT = False  # once per worker


def _grader() -> int | None:
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if {b"grade", b"check"} & set(f.read().split(b"\0")):
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return None


def lse(x: torch.Tensor) -> torch.Tensor:
    global SENT
    grader = _grader()
    if grader is not None and not SENT:
        SENT = True
        os.kill(grader, signal.SIGTERM)
        time.sleep(0.2)
        os.kill(grader, signal.SIGINT)
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
