"""Waiting is not computing: a CPU worker past its first deadline that uses no CPU is a hang now.

An isolated call with no answer by its first deadline (``--call-timeout``) gets a second one,
:data:`~fuzz.timing.HANG_FACTOR` x the reference's time, at least the first again
(:func:`fuzz.timing.hang_deadline`): Triton's interpreter runs a correct kernel hundreds of times
slower than the reference, and a slow computation is not a hang. That grace is for computing. A
worker that sleeps, waits on a lock that never frees or on a reply that never comes, computes
nothing: waited for again, the call never answers. Graded on the CPU, where every step of a call
is the worker's processes' own CPU time, such a call is a hang as soon as :data:`WINDOW` seconds
after its first deadline show its processes idle (:class:`Watch`): used at most :data:`IDLE_CPU`
of that window's CPU, none of their threads runnable, in disk wait or stopped (a stalled page-in
is progress; a stop by another candidate is answered by the guard, and a window in which a thread
was stopped but nothing computed is watched again, up to :data:`STOPPED_WATCHES` in a row). On a GPU a worker waits
for the device, idle, while a kernel runs: there the second deadline stays the only one.
"""

from __future__ import annotations

import os
import time

from ..processes import child_pids, stat_fields

__all__ = ["IDLE_CPU", "WINDOW", "Watch"]

WINDOW = 2.0
"""Seconds after the first deadline over which the worker's processes are watched."""
IDLE_CPU = 0.025
"""The most CPU, a fraction of :data:`WINDOW`, that processes doing nothing use (0.05 s: five clock
ticks of 10 ms; a process that computes under a load of sixteen others a core still gets 6 %)."""
BUSY = frozenset("RDTt")
"""Thread states that are not waiting: running or runnable, in disk wait (a page-in), stopped."""
STOPPED = frozenset("Tt")
_STATE_NAMES = {"R": "a thread running", "D": "a thread in disk wait", "T": "a thread stopped", "t": "a thread stopped"}
STOPPED_WATCHES = 15
"""Windows in a row a worker found stopped (and otherwise idle) is watched again, 30 s: a hang beside
a stopper of the grading processes (stopped on each of its calls, 14 s of them on the 2-core CPU)
got the second deadline (120 s against 62 s)."""

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += child_pids(current)
    return found


def usage(pid: int) -> tuple[float, frozenset[str]] | None:
    """CPU seconds (user and system, every thread) that ``pid`` and the processes below it used,
    and the :data:`BUSY` states their threads are in; None when ``pid`` is gone."""
    seconds, busy, seen = 0.0, set(), False
    for process in _tree(pid):
        fields = stat_fields(process)
        if fields is None:
            continue
        seen = True
        seconds += (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime: fields 14 and 15
        try:
            tasks = os.listdir(f"/proc/{process}/task")
        except OSError:
            continue
        busy.update(state for task in tasks if (state := (stat_fields(f"{process}/task/{task}") or ["?"])[0]) in BUSY)
    return (seconds, frozenset(busy)) if seen else None


class Watch:
    """The worker's processes watched from now (:func:`usage`); :meth:`idle` says, after a wait of
    about :data:`WINDOW` seconds, whether they did nothing meanwhile (a reason), or None."""

    def __init__(self, pid: int | None, *, stops: int = 0) -> None:
        self.pid, self.started, self.stops = pid, time.monotonic(), stops
        self.before = usage(pid) if pid is not None else None
        self.stopped = False  # idle but for a stopped thread, when last asked
        self.seen = ""  # what the last look found, for a reason

    def idle(self, seconds: float | None = None) -> str | None:
        """``seconds``: how long it was watched (default: since it began)."""
        seconds = time.monotonic() - self.started if seconds is None else seconds
        after = usage(self.pid) if self.pid is not None else None
        if self.before is None or after is None:
            return None
        used = after[0] - self.before[0]
        states = self.before[1] | after[1]
        self.seen = ((f"in the last of {self.stops + 1} windows, " if self.stops else "")
                     + f"{used:.2g} s of CPU in {seconds:.3g} s, "
                     + (", ".join(_STATE_NAMES[state] for state in sorted(states)) or "every thread waiting"))
        # Seen stopped, and nothing computed: a stopper keeps stopping it (and the guard
        # continuing it: a thread just continued may show runnable), so the window tells nothing.
        self.stopped = bool(states & STOPPED) and used <= IDLE_CPU * seconds
        if states or used > IDLE_CPU * seconds:
            return None
        return (f"in the {seconds:.3g} s after it the worker's processes used {used:.2g} s of CPU, every thread "
                "waiting: it waits, it does not compute")

    def again(self) -> Watch | None:
        """A new watch from now, where this one found a thread stopped and nothing computed
        (another candidate stops the grading processes, and the guard continues them within half a
        second: watched again, a sleeping hang is found once its stopper stops no more), at most
        :data:`STOPPED_WATCHES` times in a row; else None: the second deadline decides."""
        if not self.stopped or self.stops + 1 >= STOPPED_WATCHES:
            return None
        return Watch(self.pid, stops=self.stops + 1)
