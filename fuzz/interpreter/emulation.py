"""What the CPU's emulation of a GPU kernel cannot run faithfully: raised by the emulator, never the kernel's fault.

On a CPU, Triton kernels run in Triton's interpreter with the fuzzer's corrections
(:mod:`fuzz.interpreter.frontend`, :mod:`fuzz.interpreter.bfloat16`, ...). Where a kernel uses a
construct the emulation cannot run as the GPU would (a libdevice function with no faithful CPU
version, a form of the language the interpreter does not model), the emulator raises
:class:`EmulationUnsupported` naming the construct. The run then ends with a verdict of its own
(``unsupported``: not FAIL, not ERROR; run with ``--device cuda``), never with an error blamed on
the kernel.

Only the emulator may say so. A candidate (untrusted, when graded) must not dodge a failure by
raising :class:`EmulationUnsupported` itself, so :func:`raised_by_emulator` counts one only when the
frame that raised it runs a function of this package (the code object itself, found among the
functions of the ``fuzz`` module its file is: not a look-alike compiled under that file name) and
Triton's interpreter was running a kernel around it (a frame of ``triton.runtime.interpreter``):
a candidate calling the emulator's refusing function itself, outside a kernel, is not the emulator
refusing its kernel. Anything else is an ordinary exception of the implementation (``error``). A
raise point of the emulator therefore raises it while a kernel runs in the interpreter. Code that
patches the process it runs in can fake anything that process reports, this too; that is beyond
a check in the same process (see the threat model in docs/grading.md).

Light on purpose: the standard library only (and the project's exception base, which imports
nothing), because it is raised inside the isolated worker.
"""

from __future__ import annotations

import os
import sys
import types

from lse_fuzz._errors import LseFuzzError

__all__ = ["EmulationUnsupported", "raised_by_emulator"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # fuzz/, this file in fuzz/interpreter/
_INTERPRETER = "triton.runtime.interpreter"


class EmulationUnsupported(LseFuzzError):
    """The CPU's emulation cannot run ``construct`` as a GPU runs it; the kernel is not to blame.

    ``construct``: what the kernel used, as a user would search their source for it
    (``"libdevice.erfcinv"``, ``"tl.inline_asm_elementwise"``). ``reason``: why the CPU cannot
    run it faithfully, one sentence.
    """

    def __init__(self, construct: str, reason: str = "") -> None:
        self.construct = construct
        self.reason = reason
        text = f"the CPU's emulation of Triton cannot run {construct} as a GPU does"
        if reason:
            text += f" ({reason})"
        super().__init__(text + "; run with --device cuda for a verdict")

    def __reduce__(self):  # crosses the worker's pipe as itself
        return (type(self), (self.construct, self.reason))


def raised_by_emulator(exc: BaseException | None) -> EmulationUnsupported | None:
    """The :class:`EmulationUnsupported` in ``exc`` or its causes and contexts that the emulator
    raised (see the module docstring), or None: ``exc`` is the implementation's own error."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, EmulationUnsupported) and _from_emulator(exc.__traceback__):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _from_emulator(tb: types.TracebackType | None) -> bool:
    """Whether the traceback's last frame (the raise) runs this package's code and a frame above it
    Triton's interpreter's."""
    codes = []
    while tb is not None:
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    if not codes or not _defined_in(codes[-1], _project_module(codes[-1].co_filename)):
        return False
    interpreter = sys.modules.get(_INTERPRETER)
    return interpreter is not None and any(_defined_in(code, interpreter) for code in codes[:-1])


def _project_module(filename: str) -> types.ModuleType | None:
    """The loaded module of this package that the file ``filename`` is (by the name its place in
    the package gives it: ``fuzz/isolation/wire.py`` is ``fuzz.isolation.wire``)."""
    path = os.path.realpath(filename)
    if not path.startswith(_PACKAGE + os.sep) or not path.endswith(".py"):
        return None
    parts = [__name__.partition(".")[0], *os.path.relpath(path[:-3], _PACKAGE).split(os.sep)]
    if parts[-1] == "__init__":
        parts.pop()
    return sys.modules.get(".".join(parts))


def _defined_in(code: types.CodeType, module: types.ModuleType | None) -> bool:
    """Whether ``code`` is (this very object, not an equal one) the code of a function ``module``
    defines: its functions, its classes' methods, the functions of its tables (a dict, list or tuple
    at its top level), and the functions nested in those."""
    if module is None or os.path.realpath(code.co_filename) != os.path.realpath(getattr(module, "__file__", "") or ""):
        return False
    found: set[int] = set()
    for value in list(vars(module).values()):
        members = list(vars(value).values()) if isinstance(value, type) else \
            list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, (list, tuple)) else []
        for member in [value, *members]:  # and a class's methods, a table's functions
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            for _ in range(8):  # and the function a wrapper installed over it holds (functools.wraps)
                if not isinstance(member, types.FunctionType):
                    break
                _collect(member.__code__, found)
                member = vars(member).get("__wrapped__")
    return id(code) in found


def _collect(code: types.CodeType, found: set[int]) -> None:
    if id(code) in found:
        return
    found.add(id(code))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _collect(const, found)
