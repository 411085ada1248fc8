"""What the CPU's emulation of a GPU kernel cannot run faithfully: raised by the emulator, never the kernel's fault.

On a CPU, Triton kernels run in Triton's interpreter with the fuzzer's corrections
(:mod:`fuzz.interpreter_frontend`, :mod:`fuzz.bfloat16_interpreter`, ...). Where a kernel uses a
construct the emulation cannot run as the GPU would (a libdevice function with no faithful CPU
version, a form of the language the interpreter does not model), the emulator raises
:class:`EmulationUnsupported` naming the construct. The run then ends with a verdict of its own
(``unsupported``: not FAIL, not ERROR; run with ``--device cuda``), never with an error blamed on
the kernel.

Light on purpose: the standard library only, because it is raised inside the isolated worker.
"""

from __future__ import annotations

__all__ = ["EmulationUnsupported"]


class EmulationUnsupported(Exception):
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
