"""Where Triton kernels run: compiled on CUDA, or in Triton's interpreter on a CPU-only machine.

Triton decides between compiling and interpreting when a ``@triton.jit`` function is *decorated*,
by reading ``TRITON_INTERPRET`` then. So the choice must be made before any kernel module of this
project is imported; :func:`ensure_interpreter` does it and every kernel module calls it first.
Triton's own library functions (``tl.max``, ``tl.sum``, ...) are decorated when ``triton`` is
imported: if it was imported before the interpreter was turned on, no kernel can run in it, and
:func:`check_device` says so instead of Triton's "Cannot call @triton.jit'd outside of the scope
of a kernel".
"""

from __future__ import annotations

import os
import sys

import torch

from . import _numpy_index
from .errors import InvalidArgument


def ensure_interpreter() -> bool:
    """Turn on Triton's interpreter when no CUDA device is present; return whether it is on.

    A user who sets ``TRITON_INTERPRET`` themselves (``1`` or ``0``) keeps their choice.
    """
    global _TRITON_IMPORTED_FIRST
    if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
        _TRITON_IMPORTED_FIRST = "triton" in sys.modules
        os.environ["TRITON_INTERPRET"] = "1"
    return interpreting()


_TRITON_IMPORTED_FIRST = False  # the interpreter was turned on after triton was imported


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def check_device(x: torch.Tensor) -> None:
    """Refuse a tensor the current Triton mode cannot run on, with the fix in the message."""
    if interpreting():
        _numpy_index.install()  # Triton 3.6's interpreter on NumPy 2.5 (see the module)
        if _TRITON_IMPORTED_FIRST:
            raise InvalidArgument(
                "triton was imported before Triton's interpreter was turned on (no CUDA device here), so its "
                "library functions were built for a GPU and no kernel can run: set TRITON_INTERPRET=1 in the "
                "environment, or import this package before triton."
            )
        if x.device.type != "cpu":
            raise InvalidArgument(
                f"x.device={str(x.device)!r}, but Triton's interpreter (TRITON_INTERPRET=1) runs "
                "on CPU tensors only: pass x.cpu(), or unset TRITON_INTERPRET to compile for the GPU."
            )
    elif x.device.type != "cuda":
        raise InvalidArgument(
            f"x.device={str(x.device)!r}, but Triton kernels are compiled for CUDA here: pass "
            "x.cuda(), or set TRITON_INTERPRET=1 before importing this package to run on the CPU."
        )
