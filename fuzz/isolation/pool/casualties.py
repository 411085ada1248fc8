"""The jobs whose driver died (a candidate killed the fork server, or its siblings' drivers): which
run again at once, beside the others, and which wait to run again alone, at the end.

A driver runs trusted code, so one that dies was killed: by the job it ran or by another job in
flight (a job that kills the fork server takes every driver with it). Only a job whose driver dies
again while nothing else runs is proven the culprit (:meth:`fuzz.isolation.pool.pool.Pool.run`).
Every casualty of a death used to wait for that proof, after the rest of the batch: its long
neighbours (a hang, a slow kernel) then ran again from the start only once the batch's slowest
job was over, a minute or more. Now the casualties of one death are triaged as soon as all of its
drivers are found (:data:`~fuzz.isolation.guard.blame.LINGER`): one, the likeliest culprit, is
held to run alone at the end, and every other runs again at once. The likeliest is the one found
dead most often (a killer is in flight at each of its deaths, an innocent only at those it ran
beside); of those, one whose candidate had loaded (its calls run the candidate's code; a driver
tells its pool before the first call, so no kill can outrun the word), the last to load (an attack
comes with the first calls); then the one started last. Times are those before a job's first
death: run again, the casualties of one death start again together. Whether a job had started a
worker is no sign: a killer's worker kills within milliseconds of its start, before its driver can
tell the pool its pid (a newcomer still importing was held in the killer's place, and waited with
its 60 s import for the end of the batch). A killer that waits before it kills, held in no death,
kills again, and is held once it has been found dead more often than the rest. The proof is
unchanged; only who waits for it is.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, replace

from ..guard.blame import LINGER
from .job import Job

__all__ = ["Casualty", "Triage"]


@dataclass(frozen=True)
class Casualty:
    """A job whose driver died: the jobs in flight ``beside`` it then (any of them may have killed
    it; itself included), when it ``started`` (``time.monotonic()``; once triaged, before its first
    death), how many ``deaths`` it was found in (once triaged), and whether it is ``cleared``: a job
    beside it was convicted since."""

    job: Job
    beside: frozenset[str]
    started: float
    loaded: float | None = None
    deaths: int = 1
    cleared: bool = False

    @property
    def likeliness(self) -> tuple[int, bool, float, float]:
        """Sorts the likeliest culprit first: found dead most often, then one whose candidate had
        loaded (it runs the candidate's calls), the last to load, then the one started last."""
        return -self.deaths, self.loaded is None, -(self.loaded or 0.0), -self.started


class Triage:
    """The casualties found (:meth:`found`), triaged once a death's drivers are all found
    (:meth:`settle`): ``held`` to run alone at the end, the others handed back by :meth:`again`."""

    def __init__(self) -> None:
        self.held: list[Casualty] = []
        self._deaths: Counter[str] = Counter()  # how often each job was found dead
        self._first: dict[str, tuple[float, float | None]] = {}  # when each started and loaded before its first death
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
        fresh = [self._counted(casualty) for casualty in fresh]
        culprit = min(fresh, key=lambda casualty: casualty.likeliness)
        self.held.append(culprit)
        self._again.extend(casualty.job for casualty in fresh if casualty is not culprit)

    def _counted(self, casualty: Casualty) -> Casualty:
        """``casualty`` with its deaths counted, and its times those before its first death."""
        started, loaded = self._first.setdefault(casualty.job.key, (casualty.started, casualty.loaded))
        return replace(casualty, deaths=self._deaths[casualty.job.key], started=started, loaded=loaded)

    @property
    def waiting(self) -> bool:
        """Whether casualties are still to be triaged or handed back."""
        return bool(self._fresh or self._again)

    def again(self) -> Job | None:
        """The next casualty to run again beside the others, or None."""
        return self._again.popleft() if self._again else None
