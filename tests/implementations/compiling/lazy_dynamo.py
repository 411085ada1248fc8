"""Correct, and torch's dynamo is imported only inside its first call, which then compiles for
COMPILE_SECONDS (a stand-in, as in slow_compile.py): the interpreter's worker does not preload
dynamo, and must watch its compiles from whenever a candidate imports it."""

import time

import torch

COMPILE_SECONDS = 1.0

_compiled: set[torch.dtype] = set()


def lse(x: torch.Tensor) -> torch.Tensor:
    if x.dtype not in _compiled:
        _compiled.add(x.dtype)
        from torch._dynamo.callback import CallbackTrigger, callback_handler

        with callback_handler.install_callbacks(CallbackTrigger.DYNAMO, f"stand-in-{x.dtype}"):
            time.sleep(COMPILE_SECONDS)
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
