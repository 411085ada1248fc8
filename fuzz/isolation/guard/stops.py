"""Stopped processes are continued: SIGSTOP from a candidate costs a moment, not a hang, and is told.

Every process of a run shares one user with the candidates, so a candidate can stop any of them
(the fork server, a driver grading a neighbour, a neighbour's worker). Whoever starts or connects
to one watches it (:func:`watch`); a daemon thread continues it when it is found stopped and tells the
listeners (:func:`report_stops`) the window it was stopped in, which is all there is to blame a
stop on (:mod:`fuzz.isolation.guard.blame`). Standard library only.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Callable

from ..processes import stat_fields

__all__ = ["QUICK_FOR", "QUICK_SLICE", "RESUMED_BY_POOL_ENV", "WAIT_SLICE", "report_stops", "resume_if_stopped",
           "resumed_by_pool", "poll_stops", "stop_reporting", "sweep", "tell_stopped", "unwatch", "watch"]

WAIT_SLICE = 0.5  # seconds between the resumer's checks that no watched process is stopped
QUICK_SLICE = 0.01
QUICK_FOR = 5.0
"""Seconds between the checks for :data:`QUICK_FOR` seconds after a stop was found: a candidate that
stops the processes of the run on every call (its own driver, its neighbours') would otherwise hold
each of them stopped for half of every :data:`WAIT_SLICE`, hundreds of times (a stopper and its
neighbour once took 303 s and 139 s instead of 15 s)."""


def resume_if_stopped(pid: int | None) -> bool:
    """Continue ``pid`` if it is stopped (SIGSTOP, SIGTSTP, ...); True if it was.

    Every process of a run shares one user with the candidates, so a candidate can stop any of
    them: the fork server, a driver grading a neighbour, a neighbour's worker. Each process that
    starts or connects to one :func:`watch`es it, so that a stop costs a moment, not a hang;
    under a pool, its process watches them all (:func:`resumed_by_pool`), to blame the stops.
    """
    if pid is None:
        return False
    fields = stat_fields(pid)
    if not fields or fields[0] not in ("T", "t"):
        return False
    try:
        os.kill(pid, signal.SIGCONT)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class _Resumer:
    """A daemon thread that continues every watched process it finds stopped, twice a second, and
    a hundred times a second for a while after it found one (stops come in bursts: an attacker's).

    A thread rather than checks where we wait: a process stopped halfway through sending a
    message leaves its reader blocked inside the read, where no check runs.

    Each stop it finds is told to the listeners (:func:`report_stops`) with the window it happened
    in: SIGSTOP names no sender, so when it happened is all there is to tell who sent it. The
    window opens when the process was last seen running (or, for a process not checked yet, at
    the time its watcher gave: before it existed) and closes once it has been continued.
    """

    def __init__(self) -> None:
        self._last_stop = -math.inf  # when a stop was last found
        self._pids: dict[int, int] = {}  # pid -> how many watch it
        self._clear: dict[int, float] = {}  # pid -> a time since which any stop of it is still to be found
        self._listeners: list[Callable[[int, float, float], None]] = []
        self._pollers: list[Callable[[], None]] = []  # stops found by another process, told by each sweep
        self._lock = threading.Lock()
        self._sweeping = threading.Lock()  # one sweep at a time: a stop is found, and told, once
        self._thread: threading.Thread | None = None

    def watch(self, pid: int | None, since: float | None = None) -> None:
        if pid is None:
            return
        since = time.monotonic() if since is None else since
        with self._lock:
            self._pids[pid] = self._pids.get(pid, 0) + 1
            self._clear[pid] = min(self._clear.get(pid, since), since)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lse-fuzz-resumer", daemon=True)
                self._thread.start()

    def unwatch(self, pid: int | None) -> None:
        with self._lock:
            if pid in self._pids:
                self._pids[pid] -= 1
                if not self._pids[pid]:
                    del self._pids[pid]
                    del self._clear[pid]

    def listen(self, listener: Callable[[int, float, float], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def unlisten(self, listener: Callable[[int, float, float], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def poll(self, poller: Callable[[], None], *, on: bool = True) -> None:
        """``poller()`` (off with ``on=False``) runs at each sweep: it tells (:meth:`tell`) the stops
        another process found and continued (this one's watchdog): so a stop found before a job
        ended is told before the job's events are claimed, as a stop the sweep finds itself is."""
        with self._lock:
            if on:
                self._pollers.append(poller)
            elif poller in self._pollers:
                self._pollers.remove(poller)

    def sweep(self) -> None:
        """Continue every watched process found stopped now, and tell the listeners."""
        with self._sweeping:
            with self._lock:
                watched, pollers = dict(self._clear), list(self._pollers)
            for poller in pollers:
                try:
                    poller()
                except Exception:  # as below: a bug there must not end the resumer's thread
                    pass
            for pid, since in watched.items():
                checked = time.monotonic()  # it is read after this: a later stop is found next time
                stopped = resume_if_stopped(pid)
                found = time.monotonic()
                with self._lock:
                    if pid in self._clear:
                        self._clear[pid] = checked
                if stopped:
                    self.tell(pid, since, found)

    def tell(self, pid: int, since: float, found: float) -> None:
        """``pid`` was found stopped between ``since`` and ``found`` and continued (by a sweep, or
        by another process: this one's watchdog, for this process itself): told to the listeners."""
        with self._lock:
            self._last_stop = max(self._last_stop, found)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(pid, since, found)
            except Exception:  # a listener's bug must not end the thread: nothing would be continued
                pass

    def pause(self) -> float:
        """Seconds until the next check: :data:`QUICK_SLICE` within :data:`QUICK_FOR` of the last
        stop found, else :data:`WAIT_SLICE`."""
        return QUICK_SLICE if time.monotonic() - self._last_stop < QUICK_FOR else WAIT_SLICE

    def _run(self) -> None:
        while True:
            time.sleep(self.pause())
            self.sweep()


_RESUMER = _Resumer()
watch = _RESUMER.watch
unwatch = _RESUMER.unwatch
sweep = _RESUMER.sweep
report_stops = _RESUMER.listen
"""Call ``listener(pid, since, found)`` for every watched process found stopped and continued:
it was stopped between ``since`` and ``found`` (``time.monotonic()``, system-wide on Linux)."""
stop_reporting = _RESUMER.unlisten
tell_stopped = _RESUMER.tell
poll_stops = _RESUMER.poll

RESUMED_BY_POOL_ENV = "LSE_FUZZ_RESUMED_BY_POOL"
"""Set in a pool's drivers: the pool's process continues the fork server and the workers they
start (it watches every pid they report), and hears of every stop, which is how a stop is blamed
(fuzz.isolation.guard.blame). A driver that continued one itself first would hide it from the pool."""


def resumed_by_pool() -> bool:
    """True in a pool's driver: whoever watches a process here leaves it to the pool's process."""
    return bool(os.environ.get(RESUMED_BY_POOL_ENV))
