"""Claims to compile and never returns: its first call enters torch.compile's compile window
(dynamo's start callbacks) and sleeps. Compiling is not hanging, but a compile is bounded:
past --compile-timeout the call is a hang, whatever the candidate claims."""

import time

import torch
from torch._dynamo.callback import CallbackTrigger, callback_handler


def lse(x: torch.Tensor) -> torch.Tensor:
    with callback_handler.install_callbacks(CallbackTrigger.DYNAMO, "forever"):
        time.sleep(3600)
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
