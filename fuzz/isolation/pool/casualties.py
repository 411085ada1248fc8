"""The jobs whose driver died (a candidate killed the fork server, or its siblings' drivers): which
run again at once, beside the others, and which wait to run again alone, at the end.

A driver runs trusted code, so one that dies was killed: by the job it ran or by another job in
flight (a job that kills the fork server takes every driver with it). Only a job whose driver dies
again while nothing else runs is proven the culprit (:meth:`fuzz.isolation.pool.pool.Pool.run`).
Every casualty of a death used to wait for that proof, after the rest of the batch: its long
neighbours (a hang, a slow kernel) then ran again from the start only once the batch's slowest
job was over, a minute or more. Now the casualties of one death are triaged as soon as all of its
drivers are found (:data:`~fuzz.isolation.guard.blame.LINGER`): those that could have killed with
their first steps are held to run alone at the end, and every other runs again at once.

Held: every casualty whose candidate had loaded at most :data:`LOADED_YOUNG` seconds before the
death (a driver tells its pool before the first call, so no kill can outrun the word; a killer
kills with its first calls); where none had, every one that had not loaded and had started at
most :data:`STARTED_YOUNG` seconds before (a kill during the import); either at its first death
and at this one (a killer kills at the same step of each run: three held casualties run again
together at the end of an H100's batch, one a killer that loaded 60 ms before it killed, the
two that had not loaded yet were held again and ran alone first, 30 s); and one found dead
:data:`DEATHS_HELD` times (a killer that waits before it kills is in flight at each death it
causes, an innocent only at those it ran beside). Where most of a death's casualties are young,
they started together (the batch's start, or all run again after a death), and youth tells
nothing: only the likeliest of them is held. When none is any of these, the likeliest culprit:
found dead most often; of those, one whose candidate had loaded, the last to load; then the one
started last. Holding only that one was not
enough: with two killers in one batch (one of the fork server, one of its siblings' drivers), the
one held was a long kernel found dead twice (beside each killer once), the young killer ran again
at once and killed again, and the long kernels lost their progress four times over (on the
2-core CPU, 40 s each). Whether a job had started a worker is no sign: a killer's worker kills
within milliseconds of its start, before its driver can tell the pool its pid. Times are those of
a job's first death: run again, the casualties of one death start again together, and a long
kernel run again is no newcomer. The proof is unchanged; only who waits for it is.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, replace

from ..guard.blame import LINGER
from .job import Job

__all__ = ["DEATHS_HELD", "LOADED_YOUNG", "STARTED_YOUNG", "Casualty", "Triage"]

LOADED_YOUNG = 2.0
"""Seconds between a candidate's load and a death within which it could have killed with its first
calls: the pool finds a dead driver within a fifth of a second, a busy 2-core machine takes a
second more to run the first call."""
STARTED_YOUNG = 4.0
"""Seconds between a job's start and a death within which its candidate, not loaded yet, could have
killed while it was imported (a worker is forked and imports the file: 0.5-2.5 s on a busy 2-core CPU)."""
DEATHS_HELD = 3
"""Found dead this often, a job is held whatever its age: a killer that waits before it kills."""


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
    died: float | None = None  # once triaged: when its first death was found
    # Once triaged: when it started and loaded in the run that died this time, and when that was.
    now: tuple[float, float | None, float] | None = None

    @property
    def killed_young(self) -> bool:
        """Whether its candidate had loaded at most :data:`LOADED_YOUNG` seconds before its first
        death and before this one: a killer kills at the same step each time it runs."""
        return all(loaded is not None and died - loaded <= LOADED_YOUNG for _, loaded, died in self._runs)

    @property
    def importing_young(self) -> bool:
        """Whether its candidate had not loaded, and had started at most :data:`STARTED_YOUNG`
        seconds before, at its first death and at this one."""
        return all(loaded is None and died - started <= STARTED_YOUNG for started, loaded, died in self._runs)

    @property
    def _runs(self) -> list[tuple[float, float | None, float]]:
        first = (self.started, self.loaded, self.died if self.died is not None else time.monotonic())
        return [first] if self.now is None else [first, self.now]

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
        # When each started and loaded before its first death, and when that death was.
        self._first: dict[str, tuple[float, float | None, float]] = {}
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
        # Loaded just before the death first: an attack comes with the first calls, and an import
        # held beside such a killer would wait at the end of the batch (a 60 s import, at the end).
        held = ([casualty for casualty in fresh if casualty.killed_young]
                or [casualty for casualty in fresh if casualty.importing_young])
        if len(held) > max(1, len(fresh) // 2):
            # Most of them young: they started together (the batch's start, or all run again after a
            # death), and youth tells nothing; held, a 60 s hang waited for the end of the batch.
            held = [min(held, key=lambda casualty: casualty.likeliness)]
        held += [casualty for casualty in fresh if casualty.deaths >= DEATHS_HELD and casualty not in held]
        if not held:
            held = [min(fresh, key=lambda casualty: casualty.likeliness)]
        self.held.extend(sorted(held, key=lambda casualty: casualty.likeliness))
        self._again.extend(casualty.job for casualty in fresh if all(casualty is not h for h in held))

    def _counted(self, casualty: Casualty) -> Casualty:
        """``casualty`` with its deaths counted, its times (and its death's) those of its first
        death, and ``now`` those of this one."""
        now = (casualty.started, casualty.loaded, self._found_at)
        started, loaded, died = self._first.setdefault(casualty.job.key, now)
        return replace(casualty, deaths=self._deaths[casualty.job.key], started=started, loaded=loaded, died=died,
                       now=now)

    @property
    def waiting(self) -> bool:
        """Whether casualties are still to be triaged or handed back."""
        return bool(self._fresh or self._again)

    def again(self) -> Job | None:
        """The next casualty to run again beside the others, or None."""
        return self._again.popleft() if self._again else None
