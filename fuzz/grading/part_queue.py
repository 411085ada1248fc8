"""The parts of one run side by side, as CPUs free up.

A run of several parts (:mod:`.parts`) takes, when it starts, one free CPU slot per part
(:mod:`.cpu_slots`). Runs started together see the slots others took: eight checks started at once
on a 16-CPU GPU host took four slots each for the first four, and the next four found none and ran
their four parts one after the other. Measured there (an H100 host, seeds 7 and 8 of the correct
and autotuned kernels, 8 at once): the runs that found no slot took a median of 45-51 s, those that
ran side by side 30-32 s; and the slots the first runs gave back were then left to nobody.

So a run no longer decides once. Its parts form a queue, claimed lowest first: this process runs
them one after another (part 0 first: it reports the target's load), and a dispatcher starts a
helper, a grading driver of its own, for the next unclaimed part whenever a slot is free, the ones
held at the start first. The examples do not change: each part's are its seed's and budget's,
whoever runs it. A part that fails (or the memory phase's finding) stops the others, as before, and
the parts not claimed by then are never started: they could not change the verdict
(:func:`.parts.decided`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .cpu_slots import Slots

__all__ = ["POLL_SECONDS", "PartQueue", "run_parts"]

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


def run_parts(count: int, *, here: Callable[[int], object], helper: Callable[[int], object],
              held: list[Slots], take: Callable[[], Slots], stopped: Callable[[], bool],
              decides: Callable[[object], bool], poll: float | None = None) -> dict[int, tuple[object, float]]:
    """Run parts ``0..count-1``: ``here(index)`` in this thread, one after another, and
    ``helper(index)`` in a thread of its own for each part claimed with a slot: those of ``held``
    (taken at the start, one slot each), then each slot ``take()`` finds free (an empty ``Slots``:
    none now). A helper holds its slot until its part ends. No part is claimed once ``stopped()``
    (another part failed) or once a part this thread ran ``decides`` the verdict. Returns, by part,
    its result and when it ended (seconds from the start); unclaimed parts are absent. An exception
    of ``here`` (Ctrl-C) is raised once the helpers are told to stop; a helper's own exception,
    once every part has ended."""
    queue, began, results, poll = PartQueue(count), time.monotonic(), {}, POLL_SECONDS if poll is None else poll
    lock, helpers, failures = threading.Lock(), [], []
    over = threading.Event()  # this thread is done claiming: the dispatcher stops looking

    def keep(index: int, result: object) -> None:
        with lock:
            results[index] = (result, round(time.monotonic() - began, 3))

    def run_helper(index: int, slot: Slots) -> None:
        try:
            keep(index, helper(index))
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
            failures.append(exc)
        finally:
            slot.release()

    def dispatch() -> None:
        spare = list(held)
        while not over.is_set() and not queue.empty and not stopped():
            slot = spare.pop() if spare else take()
            if not len(slot):
                over.wait(poll)
                continue
            index = queue.claim()
            if index is None:
                slot.release()
                break
            thread = threading.Thread(target=run_helper, args=(index, slot), name=f"lse-fuzz-part-{index}", daemon=True)
            with lock:
                helpers.append(thread)
            thread.start()
        for slot in spare:
            slot.release()

    first = queue.claim()  # part 0 is this thread's: the target's load is reported from here
    dispatcher = threading.Thread(target=dispatch, name="lse-fuzz-part-dispatch", daemon=True)
    dispatcher.start()
    try:
        index = first
        while index is not None:
            result = here(index)
            keep(index, result)
            if decides(result) or stopped():
                break
            index = queue.claim()
    finally:
        over.set()
        dispatcher.join()
    for thread in list(helpers):
        thread.join()
    if failures:
        raise failures[0]
    return results
