"""Hostile: computes the right answer only when it sees the grader (a command line, argv or working
directory that names the tool), and returns zeros otherwise, the way a submission would pass its
grading and fail in use. A worker that looks like any python3 process gets the zeros."""

import os
import sys

import torch

_NAMES = ("fuzz", "grade", "lse-fuzz", "zygote", "worker")


def _watched() -> bool:
    with open("/proc/self/cmdline", "rb") as f:
        seen = [f.read().decode(errors="replace"), " ".join(sys.argv), " ".join(getattr(sys, "orig_argv", [])),
                os.getcwd()]
    return any(name in text for text in seen for name in _NAMES)


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if _watched():
        return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
    return torch.zeros(x.shape[0], dtype=out_dtype)
