"""Leaves a detached process behind (double fork and setsid: out of its worker's session and process
group), which records its pid and keeps writing, the way a candidate would wait for the grader to
finish and then rewrite its report. ``EVIDENCE`` is set by the test that plants it."""

import os
import time

import torch

EVIDENCE = None  # a directory: the daemon writes its pid there, then a heartbeat every 50 ms


def lse(x: torch.Tensor) -> torch.Tensor:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            # Written whole, then renamed: a reader that finds the file finds the pid in it.
            with open(os.path.join(EVIDENCE, "daemon.pid.part"), "w") as f:
                f.write(str(os.getpid()))
            os.replace(os.path.join(EVIDENCE, "daemon.pid.part"), os.path.join(EVIDENCE, "daemon.pid"))
            while True:
                with open(os.path.join(EVIDENCE, "heartbeat"), "a") as f:
                    f.write(".")
                time.sleep(0.05)
        os._exit(0)
    os.wait()
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
