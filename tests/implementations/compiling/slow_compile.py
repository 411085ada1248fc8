"""Correct, and its first call of each dtype compiles for COMPILE_SECONDS: the compile is stood in
for by a sleep inside torch.compile's own compile window (dynamo's start and end callbacks, the
edges a real torch.compile reports), so the test needs neither a GPU nor a C++ compiler. With a
call deadline shorter than the compile, the call must pass: compiling is not hanging."""

import time

import torch
from torch._dynamo.callback import CallbackTrigger, callback_handler

COMPILE_SECONDS = 3.0

_compiled: set[torch.dtype] = set()


def lse(x: torch.Tensor) -> torch.Tensor:
    if x.dtype not in _compiled:
        _compiled.add(x.dtype)
        with callback_handler.install_callbacks(CallbackTrigger.DYNAMO, f"stand-in-{x.dtype}"):
            time.sleep(COMPILE_SECONDS)
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
