"""Who could have stopped a process of the pool: the jobs in flight while it happened.

A job's process can stop (SIGSTOP) the fork server, a driver or another job's worker. The pool's
process continues them all (:mod:`.stops`; its drivers leave that to it), so it hears of every
stop, and :class:`StopBlame` hands each on as a :class:`~.signals.SignalEvent` naming the jobs
that were in flight at any moment between the last time that process was seen running and the
moment it was found stopped (:class:`Timeline`): SIGSTOP names no sender, only the time does.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence

from .signals import Sender, SignalEvent, SignalGuard, Stopped
from .stops import report_stops, stop_reporting, sweep, unwatch, watch

__all__ = ["LINGER", "StopBlame", "Timeline", "own_stops", "stop_event"]

LINGER = 1.0
"""Seconds a job still counts as in flight after it ended: what its worker left behind (an
orphan) lives until the fork server has killed it, a moment later, and may act meanwhile; and a
process sent SIGSTOP stops only when the kernel next schedules it, a moment after the sending."""


class Timeline:
    """When each job was in flight: which jobs could have done what happened in a window of time.

    Times are ``time.monotonic()``. A job counts from the moment it is handed to a driver until
    :data:`LINGER` after it ended; a job run again is in flight again.
    """

    def __init__(self, linger: float = LINGER) -> None:
        self.linger = linger
        self._spans: list[list] = []  # [key, start, end or None], in the order started

    def started(self, key: str, at: float) -> None:
        self._spans.append([key, at, None])

    def ended(self, key: str, at: float) -> None:
        for span in self._spans:
            if span[0] == key and span[2] is None:
                span[2] = at
                return

    def quiet_from(self) -> float:
        """The moment from which no job handed so far counts as in flight (inf while one runs)."""
        if any(end is None for _, _, end in self._spans):
            return math.inf
        return max((end + self.linger for _, _, end in self._spans), default=-math.inf)

    def between(self, since: float, until: float) -> tuple[str, ...]:
        """The keys of the jobs in flight at any moment from ``since`` to ``until`` (those that
        started or ended meanwhile too), in the order they started."""
        return tuple(dict.fromkeys(key for key, start, end in self._spans
                                   if start <= until and (end is None or end + self.linger >= since)))


def stop_event(kind: Stopped, pid: int, in_flight: tuple[str, ...], owner: str | None = None) -> SignalEvent | None:
    """The event of the pool's process ``pid`` found stopped while the jobs ``in_flight`` ran
    (``owner``: the job ``pid`` works for, if a worker); None when it is no attack: a job's own
    worker, stopped while that job ran alone (by itself: no other process of the grading waited)."""
    if owner is not None and in_flight == (owner,):
        return None
    return SignalEvent(signal.SIGSTOP, 0, Sender.UNNAMED, (), in_flight, kind, pid, owner)


class StopBlame:
    """The pool's processes (which of them each pid is, and the job a worker works for) and when
    each job was in flight; every stop of one of them the resumer finds goes to :attr:`report` as
    an event naming the jobs in flight then. The resumer's thread reads it, hence the lock."""

    def __init__(self) -> None:
        self.report: Callable[[SignalEvent], None] | None = None
        self._lock = threading.Lock()
        self._timeline = Timeline()
        self._kinds: dict[int, Stopped] = {}  # pid -> which of the pool's processes it is
        self._owners: dict[int, str] = {}  # a worker's pid -> the key of the job it works for
        # This process itself: its watchdog continues it when it is stopped (guard.watchdog).
        self._kinds[os.getpid()] = Stopped.GRADER
        report_stops(self._found_stopped)

    def track(self, pid: int, kind: Stopped, *, owner: str | None = None) -> None:
        """``pid`` is one of the pool's processes: the fork server, a driver, or ``owner``'s worker."""
        with self._lock:
            self._kinds[pid] = kind
            if owner is not None:
                self._owners[pid] = owner

    def untrack(self, pid: int) -> None:
        with self._lock:
            self._kinds.pop(pid, None)

    def worker_started(self, pid: int, key: str, since: float) -> None:
        """The job ``key`` started the worker ``pid`` (not before ``since``): tracked and watched."""
        self.track(pid, Stopped.WORKER, owner=key)
        watch(pid, since)

    def handed(self, key: str) -> None:
        """The job ``key`` goes to a driver now: in flight from this moment."""
        with self._lock:
            self._timeline.started(key, time.monotonic())

    def over(self, key: str, processes: Sequence[int]) -> None:
        """The job ``key`` ended (its workers ``processes`` are gone or going): a stop found from
        now on may still name it, for :data:`LINGER`, and its workers are no longer watched."""
        sweep()  # a stop it did before it ended is found now, while it is still in flight
        with self._lock:
            self._timeline.ended(key, time.monotonic())
            for pid in processes:
                self._kinds.pop(pid, None)
                self._owners.pop(pid, None)
        for pid in processes:
            unwatch(pid)

    def between(self, since: float, until: float) -> tuple[str, ...]:
        with self._lock:
            return self._timeline.between(since, until)

    def quiet_from(self) -> float:
        with self._lock:
            return self._timeline.quiet_from()

    def _found_stopped(self, pid: int, since: float, found: float) -> None:
        """A process found stopped between ``since`` and ``found`` and continued (the resumer's
        thread calls this): an event for :attr:`report` naming every job in flight then."""
        with self._lock:
            kind, owner = self._kinds.get(pid), self._owners.get(pid)
            in_flight = self._timeline.between(since, found)
        if kind is None:
            return  # not one of this pool's (the caller's own worker, another pool's)
        event, report = stop_event(kind, pid, in_flight, owner), self.report
        if event is not None and report is not None:
            report(event)

    def close(self) -> None:
        stop_reporting(self._found_stopped)


@contextlib.contextmanager
def own_stops(guard: SignalGuard, in_flight: Callable[[float, float], tuple[str, ...]] | None = None):
    """Every stop of this process that its watchdog tells (:mod:`.watchdog`) goes to ``guard`` as an
    event while the body runs. With no ``in_flight``, for ``check``, where nothing but the one
    candidate runs beside it, so such a stop is that candidate's doing, as a signal from its
    processes is; with it (``in_flight(since, until)``: the jobs in flight while it was stopped), it
    names those, and only a job that ran alone is blamed (an op's batch, fuzz.merge.batch). Yields
    a function to call before a job's events are claimed: a stop during the job is told by then."""
    me = os.getpid()

    def found(pid: int, since: float, until: float) -> None:
        if pid == me:
            guard.add(stop_event(Stopped.GRADER, pid, in_flight(since, until) if in_flight is not None else ()))

    report_stops(found)
    try:
        yield sweep
    finally:
        stop_reporting(found)

