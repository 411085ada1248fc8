"""The parts of one run side by side, as CPUs free up.

A run of several parts (:mod:`.parts`) takes, when it starts, one free CPU slot per part
(:mod:`.cpu_slots`). Runs started together see the slots others took: eight checks started at once
on a 16-CPU GPU host took four slots each for the first four, and the next four found none and ran
their four parts one after the other. Measured there (an H100 host, seeds 7 and 8 of the correct
and autotuned kernels, 8 at once): the runs that found no slot took a median of 45-51 s, those that
ran side by side 30-32 s; and the slots the first runs gave back were then left to nobody.

So a run no longer decides once. Its parts form a queue, claimed lowest first: the run's own
worker runs them one after another (part 0 first: it reports the target's load; one worker, as a
worker's start costs seconds on a busy GPU host), and a dispatcher starts a helper, a grading
driver of its own, for the next unclaimed part whenever a slot is free, the ones held at the start
at once. The examples do not change: each part's are its seed's and budget's, whoever runs it. A
part that fails (or the memory phase's finding) stops the others, as before, and the parts not
claimed by then are never started: they could not change the verdict (:func:`.parts.decided`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .cpu_slots import Slots

__all__ = ["POLL_SECONDS", "PartQueue", "Parts"]

POLL_SECONDS = 0.25
"""How often the dispatcher looks for a free slot while parts wait: a slot freed is taken within
this, and the look (one ``flock`` per CPU) costs microseconds."""


class PartQueue:
    """Parts ``0..count-1``, each claimed once, lowest first, by whichever thread asks."""

    def __init__(self, count: int) -> None:
        self.count, self._next, self._lock = count, 0, threading.Lock()

    def claim(self) -> int | None:
        with self._lock:
            if self._next >= self.count:
                return None
            self._next += 1
            return self._next - 1

    @property
    def empty(self) -> bool:
        with self._lock:
            return self._next >= self.count


class Parts:
    """The parts ``0..count-1`` of one run: the caller claims them (:meth:`claim`, part 0 first)
    and runs each, saying so (:meth:`keep`); from :meth:`start` on, a dispatcher runs
    ``helper(index)`` in a thread of its own for each part it claims with a slot: those of ``held``
    (taken at the start, one slot each), then each slot ``take()`` finds free (an empty ``Slots``:
    none now). A helper holds its slot until its part ends. Nothing is claimed once ``stopped()``
    (a part failed) or once the caller is done claiming. ``close()`` runs once, at :meth:`finish`
    or :meth:`abandon`."""

    def __init__(self, count: int, *, helper: Callable[[int], object], held: list[Slots],
                 take: Callable[[], Slots], stopped: Callable[[], bool], close: Callable[[], None] = lambda: None,
                 poll: float | None = None) -> None:
        self.queue, self.stopped = PartQueue(count), stopped
        self._helper, self._spare, self._take, self._close = helper, list(held), take, close
        self._poll = POLL_SECONDS if poll is None else poll
        self._first = self.queue.claim()  # part 0 is the caller's: the target's load is reported from there
        self._began, self._results, self._lock = time.monotonic(), {}, threading.Lock()
        self._helpers: list[threading.Thread] = []
        self._failures: list[BaseException] = []
        self._over, self._closed = threading.Event(), False
        self._dispatcher = threading.Thread(target=self._dispatch, name="lse-fuzz-part-dispatch", daemon=True)

    def start(self) -> Parts:
        self._began = time.monotonic()
        self._dispatcher.start()
        return self

    def claim(self) -> int | None:
        """The caller's next part (the lowest unclaimed), None once none is left or a part failed."""
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return None if self.stopped() else self.queue.claim()

    def keep(self, index: int, result: object) -> object:
        """``result`` is part ``index``'s (it ended now); returns it."""
        with self._lock:
            self._results[index] = (result, round(time.monotonic() - self._began, 3))
        return result

    def finish(self) -> dict[int, tuple[object, float]]:
        """Once the caller claims no more: wait for the helpers; by part, its result and when it ended
        (seconds from :meth:`start`); the parts never claimed are absent. A helper's exception is
        raised here, once every helper has ended."""
        self._stop_dispatching()
        for thread in list(self._helpers):
            thread.join()
        self._closing()
        if self._failures:
            raise self._failures[0]
        return dict(self._results)

    def abandon(self) -> None:
        """The run ends without the parts' verdicts (the target did not load, Ctrl-C, an error of
        the harness): no more helpers start, and ``close()`` stops those running."""
        self._stop_dispatching()
        self._closing()

    def _stop_dispatching(self) -> None:
        self._over.set()
        if self._dispatcher.is_alive():
            self._dispatcher.join()
        for slot in self._spare:
            slot.release()
        self._spare = []

    def _closing(self) -> None:
        if not self._closed:
            self._closed = True
            self._close()

    def _dispatch(self) -> None:
        while not self._over.is_set() and not self.queue.empty and not self.stopped():
            slot = self._spare.pop() if self._spare else self._take()
            if not len(slot):
                self._over.wait(self._poll)
                continue
            index = self.queue.claim()
            if index is None:
                slot.release()
                return
            thread = threading.Thread(target=self._run_helper, args=(index, slot), name=f"lse-fuzz-part-{index}",
                                      daemon=True)
            with self._lock:
                self._helpers.append(thread)
            thread.start()

    def _run_helper(self, index: int, slot: Slots) -> None:
        try:
            self.keep(index, self._helper(index))
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread, by finish()
            self._failures.append(exc)
        finally:
            slot.release()
