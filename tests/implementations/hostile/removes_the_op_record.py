"""Hostile: pops every dispatch mode off the stack (the grader's operator record among them), then
calls torch.logsumexp where no mode sees it. The worker finds its record gone after the call."""

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode


def lse(x: torch.Tensor) -> torch.Tensor:
    while _get_current_dispatch_mode_stack():
        _pop_mode()
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(out_dtype), dim=1)
