"""What a check reports when an implementation is wrong, and what the runner reports when it raised.

:class:`CheckFailure` is the one failure format of the project (which check, which row, expected
vs got, the error against the tolerance, in the output dtype's ulps and in bounds, why it
matters, the replay command); :class:`ImplError` carries the traceback of an implementation
that raised instead of returning. Both know the example they happened on once the runner has
filled in ``input`` and, once a reproducer is saved, ``replay``.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Sequence

__all__ = ["CheckFailure", "ImplError", "exception_chain", "format_number"]


def format_number(value: float) -> str:
    return repr(float(value))


def _json_float(value: float | None) -> float | str | None:
    if value is None:
        return None
    return value if math.isfinite(value) else str(value)


class CheckFailure(AssertionError):
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
            return f"error:    {self.explanation} (tolerance model of reference.compare)"
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


class ImplError(Exception):
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
