"""The grader's own stop: a watchdog continues it, as the grader continues the processes it starts.

A candidate runs as the grader's user, so it can stop the grader itself (``kill(grader, SIGSTOP)``,
the grader found through its parent chain). Nothing continued it: every other process of the run
is continued by the grader (:mod:`.stops`), and the grader waited, stopped, until someone killed
the batch from outside (a five-line candidate held a batch of two for good). While a
:class:`~.signals.SignalGuard` is on, a watchdog process (:func:`start_watchdog`) checks the grader's state
every :data:`~.stops.WAIT_SLICE` seconds (every :data:`~.stops.QUICK_SLICE` for a while after a stop,
as stops come in bursts) and continues it when it is found stopped, telling the grader over a pipe
when (:func:`~.stops.tell_stopped`: the window is blamed as any stop, on the jobs in flight then).

The terminal's Ctrl-Z must still stop the grader. The watchdog stays in the grader's process group
(no session of its own), so the terminal stops it too; it continues the grader only once the
grader has been stopped for :data:`SETTLE` seconds while the watchdog itself ran, which a stop of
the whole group does not allow (the watchdog is stopped then, at the latest when it wakes). A
tracing stop (a debugger: state ``t``) is left alone. The watchdog ends when the grader does.

Standard library only; the watchdog runs ``python -I`` (no site, no user paths) with its code inline.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import subprocess
import sys
import threading
import time

from .stops import QUICK_FOR, QUICK_SLICE, WAIT_SLICE, poll_stops, tell_stopped

__all__ = ["GAP", "SETTLE", "Watchdog", "is_watchdog_of", "keep_running", "start_watchdog"]

SETTLE = 0.05
"""Seconds the grader must stay stopped, the watchdog running, before it is continued: a stop of the
whole process group (the terminal's Ctrl-Z) stops the watchdog within them."""

GAP = 4 * QUICK_SLICE
"""A pause of this process's tick longer than this may be a stop (:meth:`Watchdog._tick`)."""

_CODE = """
import os, signal, sys, time
grader, out = int(sys.argv[1]), int(sys.argv[2])
wait, quick, quick_for, settle = map(float, sys.argv[3:7])
def state():
    try:
        with open(f"/proc/{grader}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
seen, last_stop = time.monotonic(), -1e9
while os.getppid() == grader:
    now = time.monotonic()
    if state() != "T":
        seen = now
    else:
        time.sleep(settle)
        if state() == "T":
            found = last_stop = time.monotonic()
            try:  # told before it is continued: the grader reads it before anything it does next
                os.write(out, f"{seen} {found}\\n".encode())
            except OSError:
                pass
            try:
                os.kill(grader, signal.SIGCONT)
            except ProcessLookupError:
                break
            seen = time.monotonic()
    time.sleep(quick if time.monotonic() - last_stop < quick_for else wait)
"""


class Watchdog:
    """The watchdog of this process (:func:`start_watchdog`); what it tells is read at every sweep of the
    resumer (:func:`~.stops.poll_stops`: before a job's events are claimed) and by a thread of
    its own meanwhile."""

    def __init__(self) -> None:
        read, write = os.pipe()
        try:
            self.process = _spawn(write)
        finally:
            os.close(write)
        os.set_blocking(read, False)
        self._read, self._pending, self._lock = read, b"", threading.Lock()
        self._last = time.monotonic()  # this process's last tick
        self._gaps: collections.deque[tuple[float, float]] = collections.deque(maxlen=64)
        self._done = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="lse-fuzz-watchdog-tick", daemon=True)
        self._ticker.start()
        poll_stops(self.drain)
        self._thread = threading.Thread(target=self._listen, name="lse-fuzz-watchdog", daemon=True)
        self._thread.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _tick(self) -> None:
        """Note every pause of this process longer than :data:`GAP`: a stop is one of them. The
        watchdog sees the grader running only every :data:`~.stops.WAIT_SLICE` (or later, on a busy
        machine), so its window can reach back into the previous job's time, which would name that
        job too; the tick bounds it to the last moment this process ran."""
        while not self._done.wait(QUICK_SLICE):
            now = time.monotonic()
            if now - self._last > GAP:
                self._gaps.append((self._last, now))
            self._last = now

    def _since(self, since: float, found: float) -> float:
        """The start of the stop found at ``found``: the last tick before the pause that holds it
        (one still going on, when the tick has not run since), else ``since``."""
        for start, end in reversed(self._gaps):
            if start <= found <= end:
                return max(since, start)
        last = self._last
        return max(since, last) if last <= found else since

    def drain(self) -> None:
        """Tell every stop the watchdog has written (non-blocking; from any thread)."""
        with self._lock:
            try:
                while chunk := os.read(self._read, 4096):
                    self._pending += chunk
            except (BlockingIOError, OSError):
                pass
            *lines, self._pending = self._pending.split(b"\n")
            for line in lines:
                with contextlib.suppress(ValueError):
                    since, found = map(float, line.split())
                    tell_stopped(os.getpid(), self._since(since, found), found)

    def _listen(self) -> None:
        while not self._done.is_set():
            with contextlib.suppress(OSError, ValueError):
                select.select([self._read], [], [], WAIT_SLICE)
            self.drain()

    def stop(self) -> None:
        """End the watchdog and its threads (the guard is off: nothing continues the grader any more)."""
        self._done.set()
        poll_stops(self.drain, on=False)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self._thread.join(timeout=5)
        self.drain()
        os.close(self._read)


def start_watchdog() -> Watchdog | None:
    """A watchdog for this process, or None where it cannot start (no /proc, no interpreter to run)."""
    if not os.path.isdir("/proc"):
        return None
    try:
        return Watchdog()
    except OSError:
        return None


def keep_running() -> subprocess.Popen | None:
    """A watchdog that continues this process when it is stopped alone and tells no one: for a
    process with nothing to blame, whose stop would only hang its caller (the batch's supervisor,
    :mod:`.supervisor`, stopped while its grader runs, would never return to the shell). None where
    it cannot start."""
    if not os.path.isdir("/proc"):
        return None
    told = os.open(os.devnull, os.O_WRONLY)
    try:
        return _spawn(told)
    except OSError:
        return None
    finally:
        os.close(told)


def _spawn(told: int) -> subprocess.Popen:
    """The watchdog of this process, telling on the descriptor ``told``: ``python -I -c CODE PID TOLD ...``
    (:func:`is_watchdog_of` reads that command line back)."""
    return subprocess.Popen(
        [sys.executable, "-I", "-c", _CODE, str(os.getpid()), str(told), str(WAIT_SLICE), str(QUICK_SLICE),
         str(QUICK_FOR), str(SETTLE)],
        pass_fds=(told,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def is_watchdog_of(pid: int, watched: int) -> bool:
    """Whether the process ``pid`` is a watchdog of the process ``watched`` (its command line)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read().split(b"\0")
    except OSError:
        return False
    return argv[1:3] == [b"-I", b"-c"] and len(argv) > 4 and argv[4] == str(watched).encode()
