"""What Triton's interpreter cannot run at all is refused by name, not blamed on the kernel.

``tl.inline_asm_elementwise`` hands the GPU a string of its own assembly (PTX on NVIDIA); Triton's
interpreter has no meaning for it and raises ``NotImplementedError("inline_asm not supported in
interpreter mode")`` from its builder (``InterpreterBuilder.create_inline_asm``), which reached
the report as the kernel's ``error``. A kernel that uses it may well be right on a GPU. :func:`install`
makes the builder raise :class:`fuzz.interpreter.emulation.EmulationUnsupported` instead, naming the construct:
the run ends ``unsupported`` (run it with ``--device cuda`` for a verdict).

Installed wherever the fuzzer runs a kernel in the interpreter, with :mod:`fuzz.interpreter.bfloat16`.
Light on purpose: the standard library and Triton only, because it runs in the isolated worker.
"""

from __future__ import annotations

from .emulation import EmulationUnsupported

__all__ = ["INLINE_ASM", "install", "installed"]

INLINE_ASM = "tl.inline_asm_elementwise"
_PATCHED = "_lse_fuzz_unsupported"


def _refuse_inline_asm(self, *args, **kwargs):
    raise EmulationUnsupported(INLINE_ASM, "inline GPU assembly has no CPU meaning")


setattr(_refuse_inline_asm, _PATCHED, True)


def install() -> bool:
    """Make the interpreter's builder refuse inline assembly by name; idempotent. False (nothing
    changed) for a Triton whose interpreter has no such builder method."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None or not callable(getattr(builder, "create_inline_asm", None)):
        return False
    builder.create_inline_asm = _refuse_inline_asm
    return True


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    method = getattr(getattr(interpreter, "InterpreterBuilder", None), "create_inline_asm", None)
    return getattr(method, _PATCHED, False)
