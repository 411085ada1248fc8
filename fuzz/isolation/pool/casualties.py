"""The jobs whose driver died (a candidate killed the fork server, or its siblings' drivers): which
run again at once, beside the others, and which wait to run again alone, at the end.

A driver runs trusted code, so one that dies was killed: by the job it ran or by another job in
flight (a job that kills the fork server takes every driver with it). Only a job whose driver dies
again while nothing else runs is proven the culprit (:meth:`fuzz.isolation.pool.pool.Pool.run`).
Every casualty of a death used to wait for that proof, after the rest of the batch: its long
neighbours (a hang, a slow kernel) then ran again from the start only once the batch's slowest
job was over, a minute or more. Now the casualties of one death are triaged as soon as all of its
drivers are found (:data:`~fuzz.isolation.guard.blame.LINGER`): the likeliest culprit is held, to
run alone at the end (one that had started a worker, where a candidate's code runs, and of those
the one that died soonest after it started: an attack comes with the first calls), and every
other runs again at once. A job found dead a second time is held whatever its time: a killer
that waits before it kills kills again there, so it costs the batch at most two deaths, as
before. The proof is unchanged; only who waits for it is.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass

from ..guard.blame import LINGER
from .job import Job

__all__ = ["Casualty", "Triage"]


@dataclass(frozen=True)
class Casualty:
    """A job whose driver died: the jobs in flight ``beside`` it then (any of them may have killed
    it; itself included), when it ``started`` (``time.monotonic()``), whether it ``had_a_worker``
    (where a candidate's code runs), and whether it is ``cleared``: a job beside it was convicted since."""

    job: Job
    beside: frozenset[str]
    started: float
    had_a_worker: bool
    cleared: bool = False

    @property
    def likeliness(self) -> tuple[bool, float]:
        """Sorts the likeliest culprit first: one that had a worker, and of those the one started
        last (the drivers of one death die together, so it died soonest after it started)."""
        return not self.had_a_worker, -self.started


class Triage:
    """The casualties found (:meth:`found`), triaged once a death's drivers are all found
    (:meth:`settle`): ``held`` to run alone at the end, the others handed back by :meth:`again`."""

    def __init__(self) -> None:
        self.held: list[Casualty] = []
        self._deaths: Counter[str] = Counter()  # how often each job was found dead
        self._fresh: list[Casualty] = []
        self._found_at = 0.0
        self._again: deque[Job] = deque()

    def found(self, casualty: Casualty) -> None:
        if not self._fresh:
            self._found_at = time.monotonic()
        self._fresh.append(casualty)

    def settle(self, *, busy: bool) -> None:
        """Triage the casualties found, once no driver of their death can still be found: LINGER
        after the first, or at once when no job runs any more."""
        if not self._fresh or (busy and time.monotonic() - self._found_at < LINGER):
            return
        fresh, self._fresh = self._fresh, []
        self._deaths.update(casualty.job.key for casualty in fresh)
        held = [casualty for casualty in fresh if self._deaths[casualty.job.key] > 1] or \
            [min(fresh, key=lambda casualty: casualty.likeliness)]
        self.held += held
        self._again.extend(casualty.job for casualty in fresh if casualty not in held)

    @property
    def waiting(self) -> bool:
        """Whether casualties are still to be triaged or handed back."""
        return bool(self._fresh or self._again)

    def again(self) -> Job | None:
        """The next casualty to run again beside the others, or None."""
        return self._again.popleft() if self._again else None
