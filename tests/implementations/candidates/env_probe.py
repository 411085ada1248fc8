"""Correct, and prints what the worker's process looks like (environment, working directory,
stdin) as one JSON line on stdout, for the isolation tests."""

import json
import os

import torch

_reported = False


def lse(x: torch.Tensor) -> torch.Tensor:
    global _reported
    if not _reported:
        _reported = True
        print(json.dumps({"env": sorted(os.environ), "cwd": os.getcwd(), "stdin": os.read(0, 16).decode(),
                          "pgid_is_pid": os.getpgid(0) == os.getpid(),
                          "triton_interpret": os.environ.get("TRITON_INTERPRET")}), flush=True)
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
