"""Every correction of Triton's interpreter, installed once, in the order they build on each other.

Triton's interpreter computes bfloat16 on bit patterns, compiles nothing, has no libdevice and reads
a kernel's globals as Python does: a CPU run would fail kernels a GPU passes and pass kernels a GPU
refuses. Each module named below corrects one of these; each install is idempotent.
"""

from __future__ import annotations

from . import bfloat16, bounds, constants, frontend, kernel_globals, libdevice, numpy_compat, pace, shortcuts, unsupported

__all__ = ["install"]


def install() -> None:
    """Make the interpreter compile and compute as a GPU does (call only with the interpreter on)."""
    bfloat16.install()  # bfloat16 arithmetic on the values
    constants.install()  # a Python number's constant as the compiled kernel holds it
    numpy_compat.install()  # NumPy 2.5 refuses Triton 3.6's int() of a scalar tensor
    pace.install()  # the language patched once per launch, not per helper call
    shortcuts.install()  # the language layer's repeated work done once (the same values)
    frontend.install()  # a kernel a GPU's compiler refuses is refused here too
    libdevice.install()  # libdevice computed with the GPU's values
    kernel_globals.install()  # a kernel's globals read as the GPU's compiler reads them
    unsupported.install()  # what it cannot run at all (inline GPU assembly) is refused by name
    bounds.install()  # an access outside the launch's tensors fails memory_bounds before it happens
