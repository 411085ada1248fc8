"""What a worker's failures become in this process: :class:`LoadFailed` (the target did not load)
and :class:`CandidateRaised` (a call raised), with the worker's traceback and exception chain."""

from __future__ import annotations

from reference.errors import InvalidArgument

from ...interpreter.bounds import OutOfBounds
from ...interpreter.emulation import EmulationUnsupported

__all__ = ["CandidateRaised", "LoadFailed", "raised_from"]


class LoadFailed(InvalidArgument):
    """The target could not be loaded in the worker (import error, missing function, signature).

    ``chain`` is the exception chain the worker saw (see :func:`fuzz.failures.exception_chain`)."""

    def __init__(self, message: str, chain: list[dict] | None = None) -> None:
        super().__init__(message)
        self.chain = list(chain or [])


class CandidateRaised(Exception):
    """The candidate raised in the worker. Subclasses carry the original exception's name, so
    reports say ``ZeroDivisionError``; the worker's traceback is attached as a note."""

    remote_type = "Exception"
    emulation: EmulationUnsupported | None = None  # the worker found it the CPU emulator's refusal (fuzz.interpreter.emulation)
    memory: OutOfBounds | None = None  # the CPU's bounds checker stopped an access (fuzz.interpreter.bounds)

    def __init__(self, message: str, traceback_text: str = "", chain: list[dict] | None = None) -> None:
        super().__init__(message)
        self.traceback_text = traceback_text
        self.remote_chain = list(chain or [])  # the exception chain in the worker, outermost first
        if traceback_text and hasattr(self, "add_note"):  # Python 3.11+
            self.add_note("traceback in the isolated worker:\n" + traceback_text.rstrip())


_RAISED_CLASSES: dict[str, type[CandidateRaised]] = {}


def _raised_class(name: str) -> type[CandidateRaised]:
    if not name.isidentifier():
        name = "Exception"
    if name not in _RAISED_CLASSES:
        _RAISED_CLASSES[name] = type(name, (CandidateRaised,), {"remote_type": name, "__module__": "candidate"})
    return _RAISED_CLASSES[name]


def raised_from(header: dict, *, emulated: bool = False) -> CandidateRaised:
    """The worker's "raised" reply as an exception of the same type name. ``emulated``: the worker
    runs Triton's interpreter (the CPU), so what it says the emulator refused (its ``emulation``:
    construct and reason, see :mod:`fuzz.interpreter.emulation`) is kept as the exception's ``emulation``,
    and the access its bounds checker stopped (``memory``, :mod:`fuzz.interpreter.bounds`) as ``memory``."""
    raised = _raised_class(header.get("type", "Exception"))(header.get("message", ""), header.get("traceback", ""),
                                                            header.get("chain"))
    said = header.get("emulation")
    if emulated and isinstance(said, dict) and isinstance(said.get("construct"), str) and said["construct"] \
            and isinstance(said.get("reason", ""), str):
        raised.emulation = EmulationUnsupported(said["construct"][:200], said.get("reason", "")[:400])
    if emulated:
        raised.memory = OutOfBounds.from_dict(header.get("memory"))
    return raised
