"""What a check reports when an implementation is wrong, and what the runner reports when it raised.

:class:`CheckFailure` is the one failure format of the project (which check, which row, expected
vs got, the error against the tolerance, in the output dtype's ulps and in bounds, why it
matters, the replay command); :class:`ImplError` carries the traceback of an implementation
that raised instead of returning; :class:`Unsupported` says that the CPU's emulation of Triton
cannot run a construct the implementation used (no verdict on this device). All three know the example they happened on once the runner has
filled in ``input`` and, once a reproducer is saved, ``replay``. :func:`headline` (an exception)
and :func:`traceback_headline` (a rendered traceback) give the one line a verdict's reason names
an exception by.
"""

from __future__ import annotations

import math
import re
import traceback
from collections.abc import Sequence

from lse_fuzz._errors import LseFuzzError

from .interpreter.emulation import EmulationUnsupported

__all__ = ["CheckFailure", "ImplError", "Unsupported", "exception_chain", "format_number", "headline", "traceback_headline"]


def format_number(value: float) -> str:
    return repr(float(value))


def _json_float(value: float | None) -> float | str | None:
    if value is None:
        return None
    return value if math.isfinite(value) else str(value)


class CheckFailure(LseFuzzError, AssertionError):
    """A check found the implementation wrong; :meth:`message` says where, by how much, and why.

    ``ulps`` is the error in units in the last place of the output dtype at the expected value,
    ``ratio`` the error as a multiple of the allowed error; both are None where they mean
    nothing (non-finite values, no tolerance involved).
    """

    def __init__(
        self,
        check: str,
        headline: str,
        *,
        row: int | None = None,
        expected: float | None = None,
        got: float | None = None,
        bound: float | None = None,
        ulps: float | None = None,
        ratio: float | None = None,
        out_dtype: str | None = None,
        explanation: str | None = None,
        mismatches: int | None = None,
        rows: int | None = None,
        details: Sequence[str] = (),
        why: str = "",
    ) -> None:
        super().__init__(headline)
        self.check = check
        self.headline = headline
        self.row = row
        self.expected = expected
        self.got = got
        self.bound = bound
        self.ulps = ulps
        self._ratio = ratio
        self.out_dtype = out_dtype
        self.explanation = explanation  # the tolerance model's own account of the error, when it gave one
        self.mismatches = mismatches
        self.rows = rows
        self.details = list(details)
        self.why = why
        self.input: str | None = None  # the counterexample, filled in by run_checks
        self.replay: str | None = None  # the replay command, filled in once a reproducer exists

    @property
    def ratio(self) -> float | None:
        """The error as a multiple of the allowed error (None when it cannot be computed)."""
        if self._ratio is not None:
            return self._ratio
        if self.expected is None or self.got is None or not self.bound:
            return None
        if not (math.isfinite(self.expected) and math.isfinite(self.got)):
            return None
        return abs(self.got - self.expected) / self.bound

    def _error_line(self) -> str | None:
        if self.expected is not None and not math.isfinite(self.expected) and (self.bound is not None or self.explanation):
            return "error:    a non-finite result must match exactly (no tolerance)"
        if self.explanation:
            model = "reference.compare_gradient" if self.check.startswith("grad_") else "reference.compare"
            return f"error:    {self.explanation} (tolerance model of {model})"
        if self.bound is None or self.expected is None or self.got is None:
            return None
        error = abs(self.got - self.expected)
        if not math.isfinite(error):
            return (f"error:    {error:.6g}; a non-finite result is allowed only when the tolerance reaches "
                    f"the output dtype's overflow threshold (allowed error {self.bound:.6g})")
        units = []
        if self.ulps is not None and math.isfinite(self.ulps):
            units.append(f"{self.ulps:.3g} ulps of {self.out_dtype or 'the output dtype'}")
        if self.ratio is not None:
            units.append(f"{self.ratio:.3g} x the allowed error")
        extra = f" ({'; '.join(units)})" if units else ""
        return (f"error:    {error:.6g} > allowed {self.bound:.6g}{extra} "
                "(tolerance model of reference.allowed_error)")

    def message(self) -> str:
        lines = [f"check {self.check!r} failed: {self.headline}"]
        if self.input:
            lines.append(f"  input:    {self.input}")
        if self.expected is not None:
            lines.append(f"  expected: {format_number(self.expected)}")
        if self.got is not None:
            lines.append(f"  got:      {format_number(self.got)}")
        error = self._error_line()
        if error:
            lines.append(f"  {error}")
        if self.mismatches is not None and self.rows is not None:
            lines.append(f"  rows:     {self.mismatches} of {self.rows} rows fail")
        lines.extend(f"  {line}" for line in self.details)
        if self.why:
            lines.append(f"  why it matters: {self.why}")
        if self.replay:
            lines.append(f"  replay:   {self.replay}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.message()

    def to_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "headline": self.headline,
            "row": self.row,
            "expected": _json_float(self.expected),
            "got": _json_float(self.got),
            "bound": _json_float(self.bound),
            "ulps": _json_float(self.ulps),
            "ratio": _json_float(self.ratio),
            "out_dtype": self.out_dtype,
            "mismatches": self.mismatches,
            "rows": self.rows,
            "why": self.why,
            "replay": self.replay,
            "message": self.message(),
        }


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def exception_chain(exc: BaseException | None) -> list[dict]:
    """The exception and its causes (``raise ... from``) and contexts, outermost first, each with
    its type and the qualified names of its classes, so a compilation error can be told from a
    runtime error by type (:func:`fuzz.outcomes.is_compile_error`).

    An exception that crossed the worker boundary carries the chain computed in the worker
    (``remote_chain``); it is used as is.
    """
    chain: list[dict] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        remote = getattr(exc, "remote_chain", None)
        if remote:
            return chain + list(remote)
        chain.append({"type": _qualified(type(exc)), "mro": [_qualified(c) for c in type(exc).__mro__],
                      "message": str(exc)[:2000]})
        exc = exc.__cause__ or exc.__context__
    return chain


# --------------------------------------------------------------------------------------------
# One line naming an exception (a verdict's reason)

try:
    _Group = BaseExceptionGroup
except NameError:  # Python 3.10: the backport Hypothesis depends on (its FlakyFailure is one)
    from exceptiongroup import BaseExceptionGroup as _Group

_PART_LIMIT = 400  # characters of each exception's message in a headline
_TRACEBACK_HEADERS = ("Traceback (most recent call last):", "Exception Group Traceback (most recent call last):")
_CHAIN_SEPARATORS = ("The above exception was the direct cause of the following exception:",
                     "During handling of the above exception, another exception occurred:")
# A line of rules, boxes and table borders (a run of three rule characters at least, with nothing
# but numbers and spaces beside): how Python draws an exception group's sub-exceptions
# ("+-+---- 1 ----", "+-------") and rich a table's edges. Such a line names nothing.
_BORDER = re.compile(r"(?=.*[|+\-=_~^*#\u2500-\u257f]{3})[\s\d|+\-=_~^*#.:\u2500-\u257f]+")
_GROUP_MARGIN = re.compile(r"^\s*[|+]\s?")  # the margin Python draws left of a group's lines
_EXCEPTION_LINE = re.compile(r"([A-Za-z_][\w.]*)(?:: (.*))?")
_SUB_EXCEPTIONS = re.compile(r"\s*\(\d+ sub-exceptions?\)$")
_EXPLAINED = {
    # Its message repeats the whole falsifying example; what it means fits in a phrase.
    "FlakyFailure": "the failure did not reproduce when Hypothesis ran the same example again",
}


def headline(exc: BaseException) -> str:
    """One line naming ``exc`` and its cause, for a verdict's reason: ``Type: the message's first
    line``; an exception group with its leaves (``FlakyFailure: ... (InvalidArgument: ...)``), a
    chained exception with its direct cause (``... (caused by ValueError: ...)``). Box, table
    border and traceback header lines of a message are skipped: they name nothing."""
    text = _named(exc)
    if isinstance(exc, _Group):
        return f"{text} ({_joined(_named(leaf) for leaf in _leaves(exc))})"
    cause = exc.__cause__ if exc.__cause__ is not None else (None if exc.__suppress_context__ else exc.__context__)
    if cause is not None:
        quoted = _first_line(str(cause))[:100]
        if not quoted or quoted not in str(exc):  # a message that quotes its cause names it already
            text += f" (caused by {headline(cause)})"
    return text


def traceback_headline(text: str) -> str:
    """:func:`headline` from a rendered traceback (``traceback.format_exc()``, what a pool's driver
    sends): the exception with its direct cause, or a group with its leaves. Text that is not a
    traceback gives its first line that is not a border."""
    blocks = _exceptions(text)
    if not blocks:
        return next((line.strip() for line in text.splitlines() if _says_something(line.strip())), "")
    named = [_named_block(block) for block in blocks]
    groups = [index for index, block in enumerate(blocks) if _SUB_EXCEPTIONS.search(block[0])]
    if groups:  # printed outermost first, then each sub-exception's traceback
        leaves = [name for name, block in zip(named[groups[0] + 1:], blocks[groups[0] + 1:])
                  if not _SUB_EXCEPTIONS.search(block[0])]
        return f"{named[groups[0]]} ({_joined(leaves)})" if leaves else named[groups[0]]
    # A chain is printed innermost first: the last is what was raised, the one before its cause.
    return named[-1] + (f" (caused by {named[-2]})" if len(named) > 1 else "")


def _exceptions(text: str) -> list[list[str]]:
    """Each exception a traceback prints, in order, as its lines: the first at the margin after a
    traceback's frames (in a group also right after a border: a sub-exception never raised has
    no frames), then the rest of its message and its notes. A traceback inside those (a message
    that is one, a worker's quoted in a note) is theirs: only one at the start, after a chain
    separator or after a group's border starts another exception."""
    grouped = "Exception Group Traceback" in text
    blocks: list[list[str]] = []
    current: list[str] | None = None
    counts, next_is_exception = True, False
    for raw in text.splitlines():
        line = _GROUP_MARGIN.sub("", raw) if grouped else raw
        stripped = line.strip()
        if not stripped:
            continue
        at_margin = not line[0].isspace()  # a frame's lines are indented (its carets too)
        if stripped in _CHAIN_SEPARATORS or at_margin and _BORDER.fullmatch(stripped):
            counts, next_is_exception, current = True, grouped and stripped not in _CHAIN_SEPARATORS, None
        elif counts and (stripped in _TRACEBACK_HEADERS or not at_margin and stripped.startswith('File "')):
            next_is_exception = True  # frames follow, or one is here (Ray prints a task's without the header)
        elif next_is_exception and at_margin:
            current = [stripped]
            blocks.append(current)
            counts, next_is_exception = False, False
        elif current is not None:
            current.append(line)
    return blocks


def _says_something(line: str) -> bool:
    return bool(line) and line not in _TRACEBACK_HEADERS and not _BORDER.fullmatch(line)


def _first_line(message: str) -> str:
    """The message's first line that says something; one that is a rendered traceback by its
    exception, one drawn in a box by its first line inside."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if lines and lines[0] in _TRACEBACK_HEADERS:
        return traceback_headline(message)
    if lines and _BORDER.fullmatch(lines[0]):  # a box's lines have a margin too
        lines = [_GROUP_MARGIN.sub("", line).strip() for line in lines]
    return next((line for line in lines if _says_something(line)), "")


def _named(exc: BaseException) -> str:
    name = getattr(exc, "remote_type", None) or type(exc).__name__  # a worker's exception by its own name
    message = exc.message if isinstance(exc, _Group) else str(exc)
    message = _EXPLAINED.get(name) or _first_line(message)
    return f"{name}: {_clipped(message)}" if message else name


def _named_block(block: list[str]) -> str:
    """``reference.errors.InvalidArgument: msg (1 sub-exception)`` -> ``InvalidArgument: msg``."""
    match = _EXCEPTION_LINE.fullmatch(block[0])
    if match is None:
        return _clipped(block[0])
    name = match.group(1).rpartition(".")[2]
    first = _SUB_EXCEPTIONS.sub("", match.group(2) or "")
    # The rest of the message counts only when its first line says nothing (a border, a header):
    # what follows a message is its notes.
    message = _EXPLAINED.get(name) or (first and _first_line("\n".join([first, *block[1:]])))
    return f"{name}: {_clipped(message)}" if message else name


def _leaves(group: _Group) -> list[BaseException]:
    leaves: list[BaseException] = []
    for exc in group.exceptions:
        leaves.extend(_leaves(exc) if isinstance(exc, _Group) else [exc])
    return leaves


def _joined(names) -> str:
    distinct = list(dict.fromkeys(names))
    return "; ".join(distinct[:3]) + (f"; and {len(distinct) - 3} more" if len(distinct) > 3 else "")


def _clipped(text: str) -> str:
    return text if len(text) <= _PART_LIMIT else text[:_PART_LIMIT - 3] + "..."


class ImplError(LseFuzzError):
    """The implementation raised instead of returning; carries its traceback text and chain."""

    def __init__(self, call: str, exc: BaseException) -> None:
        self.call = call
        self.exc_type = getattr(exc, "remote_type", None) or type(exc).__name__
        self.chain = exception_chain(exc)
        self.text = "".join(traceback.format_exception(exc)).rstrip()
        self.input: str | None = None
        self.replay: str | None = None
        super().__init__(f"{self.exc_type} raised by the implementation during {call}: {exc}")

    check = None  # no check failed: the implementation did not return

    def message(self) -> str:
        lines = [str(self)]
        if self.input:
            lines.append(f"  input:    {self.input}")
        if self.replay:
            lines.append(f"  replay:   {self.replay}")
        lines.append("  traceback:")
        lines.extend("    " + line for line in self.text.splitlines())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {"call": self.call, "exception": self.exc_type, "traceback": self.text, "replay": self.replay,
                "chain": self.chain}


class Unsupported(LseFuzzError):
    """The CPU's emulation of Triton cannot run a construct the implementation used, as a GPU runs
    it: the emulator refused (:class:`fuzz.interpreter.emulation.EmulationUnsupported`), so this device gives
    no verdict. Not a failure of the implementation, nor a pass: run it with ``--device cuda``."""

    def __init__(self, call: str, refusal: EmulationUnsupported) -> None:
        self.call = call
        self.construct = refusal.construct
        self.reason = refusal.reason
        self.input: str | None = None
        self.replay: str | None = None
        super().__init__(self.headline())

    check = None  # no check failed: the CPU could not run the implementation

    def headline(self) -> str:
        """'UNSUPPORTED on the CPU: the kernel uses tl.inline_asm_elementwise, which ...'."""
        why = f" ({self.reason})" if self.reason else ""
        return (f"UNSUPPORTED on the CPU: the kernel uses {self.construct}, which the CPU's emulation of Triton "
                f"cannot run as a GPU does{why}; run with --device cuda for a verdict")

    def message(self) -> str:
        lines = [self.headline(), f"  during:   {self.call}"]
        if self.input:
            lines.append(f"  input:    {self.input}")
        if self.replay:
            lines.append(f"  replay:   {self.replay}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {"construct": self.construct, "reason": self.reason, "call": self.call, "replay": self.replay,
                "message": self.message()}
