"""Hostile: wrong, and claims the CPU cannot run it, to dodge the failure.

It raises ``fuzz.interpreter.emulation.EmulationUnsupported`` through the emulator's own refusing function
(the interpreter builder's ``create_inline_asm``, which ``fuzz.interpreter.unsupported`` makes
refuse inline GPU assembly), called from its launcher rather than from a kernel: the raise is in
the project's code, but no kernel was running in Triton's interpreter around it. The grader
takes it for the candidate's own exception: ``error``, not ``unsupported``.
"""

import torch
from triton.runtime import interpreter


def lse(x: torch.Tensor) -> torch.Tensor:
    if x.shape[0] and x.shape[1]:
        interpreter.InterpreterBuilder.create_inline_asm(None, "", "", [], None, True, 1)
    return torch.zeros(x.shape[0], dtype=torch.float32)  # wrong wherever it returns
