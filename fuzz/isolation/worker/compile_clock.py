"""A request's clock that stops while the worker compiles (the parent's half of
:mod:`fuzz.isolation.worker.compile_watch`).

The worker sends a ``compiling`` notice when a compiler starts for the candidate and a
``compiled`` one when it ends; :class:`CompileClock` takes them off the channel for the proxy,
keeps what was compiled (:class:`fuzz.timing.Compile`, the findings) and says how long the wait
may go on: while compiling, up to the compile limit of the request; otherwise the request's own
deadline, which the compiling time did not use up.
"""

from __future__ import annotations

import time

from ...timing import Compile, compile_label

__all__ = ["NOTICES", "CompileClock"]

NOTICES = ("compiling", "compiled")


class CompileClock:
    """Compile notices of one worker; ``limit`` bounds the seconds one request may spend compiling."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.compiles: list[Compile] = []
        self.total = 0.0  # seconds of every finished compile of this worker
        self._current: dict | None = None  # the notice of the compile in progress
        self._began = 0.0
        self._spent = 0.0  # seconds of finished compiles in the request in progress

    @property
    def compiling(self) -> bool:
        return self._current is not None

    def spent(self) -> float:
        """Seconds the request in progress has spent compiling, the compile under way included."""
        return self._spent + (time.monotonic() - self._began if self._current is not None else 0.0)

    def left(self) -> float:
        """Seconds the compile under way may still take."""
        return self.limit - self.spent()

    def note(self, header: dict, *, call: int) -> bool:
        """Take ``header`` if it is a compile notice (True), else leave it (False)."""
        op = header.get("op")
        if op not in NOTICES:
            return False
        if op == "compiling":
            if self._current is None:
                self._began = time.monotonic()
            self._current = header
        elif self._current is not None:
            # Timed here, not by the worker's word: the seconds this process waited.
            seconds = time.monotonic() - self._began
            self._spent += seconds
            self.total += seconds
            self._current = None
            try:
                self.compiles.append(Compile(str(header.get("kind", "?"))[:40], str(header.get("kernel", "?"))[:120],
                                             int(header.get("block") or 0), seconds, call))
            except (TypeError, ValueError):  # a malformed notice (a forged one): timed, not recorded
                pass
        return True

    def next_request(self) -> None:
        """A reply came: the next request starts with no compiling time spent."""
        self._spent = 0.0
        self._current = None

    def describe(self) -> str:
        """What is compiling now, for a timeout's message."""
        current = self._current or {}
        label = compile_label(current.get("kind", "?"), current.get("kernel", "?"), current.get("block"))
        return (f"compiling {label} for "
                f"{self.spent():.0f} s, past the compile limit of {self.limit:g} s (--compile-timeout): "
                "a compiler that does not return")

    def compiled_in(self, call: int) -> str:
        """What a reason about call ``call`` adds: the seconds it spent compiling, and what ("" if none)."""
        done = [c for c in self.compiles if c.call == call]
        if not done:
            return ""
        return (f" (not counting {sum(c.seconds for c in done):.1f} s of compiling in this call: "
                f"{'; '.join(c.describe() for c in done[-3:])})")
