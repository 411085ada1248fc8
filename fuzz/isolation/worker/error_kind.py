"""How the parent is to treat what a candidate raised in its worker (the ``kind`` of a ``raised``
reply, which :func:`fuzz.outcomes.call_outcome` maps to an outcome): a resource limit (a write past
the output-file-size limit, an allocation past the address-space limit or the GPU's memory), a
CUDA error (the context is unusable after it), or an exception like any other; whether it was
the CPU emulator's refusal of a construct (the reply's ``emulation``: no verdict on the CPU); and
whether the CPU's bounds checker stopped an out-of-bounds access (the reply's ``memory``)."""

from __future__ import annotations

import errno
import os

import torch

from ...gpu_memory import others_fill_the_gpu
from ...interpreter.bounds import violation_in
from ...interpreter.emulation import raised_by_emulator

__all__ = ["emulator_refusal", "error_kind", "memory_violation"]


def memory_violation(exc: BaseException) -> dict | None:
    """The out-of-bounds access the CPU's bounds checker stopped (:mod:`fuzz.interpreter.bounds`), as
    the reply's ``memory``, when this worker runs Triton's interpreter; None otherwise."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    violation = violation_in(exc)
    return None if violation is None else violation.to_dict()


def emulator_refusal(exc: BaseException) -> dict | None:
    """``{"construct", "reason"}`` when the CPU emulator raised ``exc`` (or its cause) refusing a
    construct (:func:`fuzz.interpreter.emulation.raised_by_emulator`) and this worker runs Triton's interpreter;
    decided here, where the traceback is. None otherwise: the candidate's own exception."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    refusal = raised_by_emulator(exc)
    return None if refusal is None else {"construct": refusal.construct, "reason": refusal.reason}


def error_kind(exc: BaseException) -> str:
    """"file_size_limit", "out_of_memory", "cuda_error", "exception", or "harness": the GPU refused
    an allocation while other processes held most of it (no verdict on the candidate)."""
    if _file_too_large(exc):
        # A write past the worker's RLIMIT_FSIZE (Python ignores SIGXFSZ, so the write fails
        # instead): a resource limit, whatever the candidate wrapped the error in.
        return "file_size_limit"
    text = str(exc)
    if isinstance(exc, MemoryError) or "can't allocate memory" in text:
        return "out_of_memory"  # the host's memory: the worker's address-space limit
    if isinstance(exc, getattr(torch, "OutOfMemoryError", ())) or "out of memory" in text:
        # Eight checks of autotuned kernels once filled an H100 this way and a correct one was
        # graded a crash: with others holding most of the GPU, the machine is at fault.
        return "harness" if others_fill_the_gpu() else "out_of_memory"
    if "CUDA error" in text or "illegal memory access" in text or "device-side assert" in text \
            or type(exc).__name__ == "AcceleratorError":
        return "cuda_error"  # the CUDA context is unusable after these
    return "exception"


def _file_too_large(exc: BaseException | None) -> bool:
    """Whether ``exc`` is, or was raised from or while handling, an OSError with errno EFBIG."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
