"""The local executor of a grading batch: each candidate a job of one worker pool on this machine
(:func:`fuzz.grading.batch.grade`; the other executor is :mod:`.ray_executor`).

A candidate whose processes signal the grader or stop the grading processes crashes
(:mod:`fuzz.isolation.guard`); what the guard can tie to no candidate names every one in flight,
and those suspects are settled after the batch so that no bad candidate holds the others up:

* a suspect that passed runs again alone, one at a time, the one named most often by events of one
  deed first (the quickest among equals): briefly (a few small examples: an attack shows with the
  first calls, and the short run ends at the first that names it), where an attacker is
  convicted; those that show none there are graded again in full, all at once, once the short
  runs are over (one named there by what none of them is tied to is graded alone in full), and
  that record replaces the first, unless what named them is explained by then (below): their
  records stand. Once one is convicted, the
  events of that kind that named it beside others are its doing, and the passing neighbours they
  named run briefly, all at once (should one of them attack where none is tied to it, those it
  names run briefly alone), each keeping its record unless it attacks too;
* a suspect that did not pass keeps its record: alone it could only turn a failure into an
  attack, at the cost of its whole time again (a hang's deadlines); the stops and signals beside
  it were answered at once, they are not its failure.

A record kept from a run the grader died in while it was in doubt (a suspect's, still to be settled:
``recheck``) is checked as a freed neighbour is, briefly, beside the others so kept, after the batch.

The suspects of the grader's own death (``alone``, from :mod:`.journal`) run first, each alone;
suspected for the first time (``briefly``), only a short run alone, which shows a killer: one
that survives it is graded beside the others. Every start is written to the journal, and so is
every written record still to be settled (in doubt), for ``--resume`` should the grader die first;
so is the end of every run alone (short or full, after a death or after the batch, whatever its
outcome), once it no longer counts as in flight: only a candidate whose run alone had not ended
was in flight alone when the grader died.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import replace

from ..isolation import Job, JobResult, Pool, SignalEvent, SignalGuard, note_event
from .candidates import Candidate
from .evaluate import blame_signals, job_record
from .journal import Journal
from .options import GradeOptions
from .record import GradeRecord

__all__ = ["CHECK_BUDGET", "CHECK_CALL_TIMEOUT", "CHECK_MAX_ELEMENTS", "LocalBatch"]

CHECK_BUDGET = 5
CHECK_MAX_ELEMENTS = 1024
"""Examples, and elements per input, of a short run alone: whether a candidate attacks the grading
shows with its first calls, whatever the input (a few seconds, where its whole run can take minutes)."""
CHECK_CALL_TIMEOUT = 10.0
"""A short run's first deadline of a call (its second one is twice that; compiling is not counted):
nothing else runs meanwhile, so a suspect that hangs or sleeps holds the whole batch for it, not
only its own slot. A call of at most 1024 elements takes far less; one past it shows no attack and
is graded beside the others, under the batch's own deadlines."""


class LocalBatch:
    """The batch's ``work`` (a pool job per candidate of ``by_key``) on ``pool``; :meth:`records`
    yields each record as it is decided, again for one decided anew. ``withdraw(target)`` takes a
    record off the report while its candidate runs again alone, ``restore(record)`` puts it back."""

    def __init__(self, work: list[Job], by_key: dict[str, Candidate], options: GradeOptions, pool: Pool, *,
                 guard: SignalGuard | None = None, journal: Journal | None = None,
                 alone: Iterable[str] = (), briefly: Iterable[str] = (),
                 recheck: Iterable[Job] = (), kept: dict[str, GradeRecord] | None = None,
                 withdraw: Callable[[str], None] = lambda target: None,
                 restore: Callable[[GradeRecord], None] = lambda record: None) -> None:
        self.work, self.by_key, self.options, self.pool = work, by_key, options, pool
        self.guard, self.journal = guard, journal
        self.alone, self.briefly = set(alone), set(briefly)
        self.withdraw, self.restore = withdraw, restore
        # Convicted of an attack on the grading, with the signals and stops it was convicted of
        # (none for a driver it killed).
        self.attackers: dict[str, list[SignalEvent]] = {}
        self.first: dict[str, GradeRecord] = dict(kept or {})  # each job's record of its run beside the others
        # Kept from a run that died with them in doubt: checked briefly after the batch, if they
        # passed (a record that did not pass stands, as a suspect's does).
        self._doubted: set[str] = {job.key for job in recheck if job.key in self.first}
        self.recheck = [job for job in recheck if job.key in self._doubted and self.first[job.key].passed]
        if guard is not None:
            guard.in_flight = pool.in_flight
            pool.report_stop = guard.add

    def records(self) -> Iterator[GradeRecord]:
        survivors = yield from self._death_suspects()
        for result in self.pool.run(self._written_down(survivors + [j for j in self.work if j.key not in self.alone])):
            self.first[result.job.key] = self._judged(result)
            self._doubt()
            yield self.first[result.job.key]
        self._doubt()
        if self.guard is not None:
            yield from self._suspects()
            # What named them died with the run before; an attacker among them attacks again in a
            # short run, beside the others rechecked only.
            yield from self._checked_together(self.recheck)
            self._doubt(cleared=self.by_key)
            for key in self.attackers:  # nothing that names an attacker is left as no one's
                self.guard.explained_by(key)

    # -- the phases ------------------------------------------------------------------------------

    def _death_suspects(self) -> Iterator[GradeRecord]:
        """The suspects of the grader's death, each alone (see the module docstring); returns those
        a short run cleared, to be graded beside the others."""
        survivors = []
        for job in [j for j in self.work if j.key in self.alone]:
            if job.key not in self.briefly:
                yield from self._by_itself(job)
            else:
                for result in self._briefly_alone(job):
                    record = self._judged(result)
                    if job.key in self.attackers:  # it attacked in its short run: that record stands
                        yield record
                    else:
                        survivors.append(job)
            if self.journal is not None:  # a record a dead run left in doubt: decided now, or graded anew
                self.journal.doubted(self.by_key[job.key], doubt=False)
        return survivors

    def _suspects(self) -> Iterator[GradeRecord]:
        """The suspects of what the guard could tie to no one (see the module docstring)."""
        tried: set[str] = set()
        freed: set[str] = set()  # named beside an attacker by what it was convicted of
        unsettled: list[Job] = []  # its short run alone showed no attack
        while True:
            for key, convicted_of in self.attackers.items():  # what named it among others, it did
                freed.update(k for event in self.guard.explained_by(key, like=convicted_of) for k in event.suspects)
            failed = {key for key in self.by_key if key not in self.first or not self.first[key].passed}
            job = next_suspect(self.guard, self.work, set(self.attackers) | tried | failed,
                               {key: record.seconds for key, record in self.first.items()})
            if job is None:
                break
            tried.add(job.key)
            self.withdraw(job.key)
            # Briefly first: an attack comes with a candidate's first calls, so an attacker is
            # convicted in seconds where its whole run alone takes a minute, the batch held meanwhile.
            if not (yield from self._checked(job, self.first[job.key], restore=False)):
                unsettled.append(job)  # graded again in full, beside the others that showed none
                continue
            self._doubt(cleared=[job.key])  # its record is the short run's now
        # Its short run alone showed nothing, and what named it is explained by another's
        # conviction since (the loop's head explains after each): its record stands, as a freed
        # neighbour's does after a short run together.
        for job in [job for job in unsettled if not self.guard.names(job.key)]:
            unsettled.remove(job)
            self.restore(self.first[job.key])
            self._doubt(cleared=[job.key])
        yield from self._in_full(unsettled)
        # A freed neighbour that passed could hide an attack of the same kind behind the convicted
        # one's: it runs briefly, and keeps its record unless it attacks.
        yield from self._checked_together([job for job in self.work if job.key in freed - tried - set(self.attackers)
                                           and job.key in self.first and self.first[job.key].passed])

    def _in_full(self, jobs: list[Job]) -> Iterator[GradeRecord]:
        """Suspects whose short runs alone showed no attack, graded again in full, all at once: the
        rest of the batch is over, so what an attack among them does names only them. Where no new
        event names one of them (the rule: they showed none alone), each gets the record of that
        run, in one run's time rather than one each (a minute of a hostile batch on an H100, with
        three neighbours of two attackers graded again one after another); its own signals convict
        it at once; one named by an event none of them is tied to (a stop) is graded again alone."""
        if len(jobs) < 2:
            for job in jobs:
                yield from self._by_itself(job)
                self._doubt(cleared=[job.key])
            return
        self.pool.wait_until_quiet()
        # The events that named them are set aside meanwhile: one alike to an old one (the same
        # process stopped, the same jobs in flight) is not kept twice, and would go unseen.
        aside = [event for job in jobs for event in self.guard.explained_by(job.key)]
        results = list(self.pool.run(self._written_down(jobs)))
        self.pool.wait_until_quiet()
        again = []
        for result in results:
            record = self._judged(result)
            if result.job.key not in self.attackers and self.guard.names(result.job.key):
                again.append(result.job)
                continue
            yield record
            self._doubt(cleared=[result.job.key])
        for event in aside:
            self.guard.add(event)
        for job in again:
            yield from self._by_itself(job)
            self._doubt(cleared=[job.key])

    # -- one job -----------------------------------------------------------------------------------

    def _judged(self, result: JobResult) -> GradeRecord:
        record = job_record(result, self.by_key[result.job.key], self.options)
        events = self.guard.claim(result.job.key, result.processes) if self.guard is not None else []
        blame_signals(record, events)
        if events or result.killed_fork_server or result.killed_its_driver:
            self.attackers.setdefault(result.job.key, []).extend(events)
        return record

    def _written_down(self, jobs: Iterable[Job], *, alone: bool = False, short: bool = False) -> Iterator[Job]:
        for job in jobs:  # taken by the pool as a driver is about to get it
            if alone or short:
                note_event("phase", key=job.key, alone=alone, short=short)
            if self.journal is not None:
                self.journal.started(self.by_key[job.key], alone=alone, short=short)
            yield job

    def _by_itself(self, job: Job) -> Iterator[GradeRecord]:
        for result in self._alone(job):
            yield self._judged(result)

    def _briefly_alone(self, job: Job) -> Iterator[JobResult]:
        """The result of a short run of ``job`` alone (:meth:`_brief`), not a verdict."""
        return self._alone(self._brief(job), short=True)

    def _alone(self, job: Job, *, short: bool = False) -> Iterator[JobResult]:
        """``job`` run with nothing else in flight: written down as alone as it starts, and as ended
        (the grader alive, whatever its outcome) once it no longer counts as in flight, after the
        caller has taken its result (what it left behind may act for a moment yet)."""
        self.pool.wait_until_quiet()  # nothing else counts as in flight: what happens now is its doing
        yield from self.pool.run(self._written_down([job], alone=True, short=short))
        if self.journal is not None:
            self.pool.wait_until_quiet()
            self.journal.ended(self.by_key[job.key])

    def _checked(self, job: Job, first: GradeRecord, *, restore: bool = True) -> Generator[GradeRecord, None, bool]:
        """``job`` run briefly alone: ``first`` blamed for what it did then, or (``restore``) put
        back. Returns whether it attacked."""
        attacked = False
        with self._cut_when_named():
            for result in self._briefly_alone(job):
                record = self._attack(job, result, first)
                if record is not None:
                    attacked = True
                    yield record
                elif restore:
                    self.restore(first)
        return attacked

    @contextlib.contextmanager
    def _cut_when_named(self):
        """Short runs meanwhile end as soon as a new event names them: what they were run for, to
        show an attack, is shown (a stopper stops the grading on every call, each call held a second
        or more; alone it is blamed, beside others it runs alone next). A run no event names ends
        by itself."""
        before = self.guard.kept()
        self.pool.cut = lambda running: self.guard.names(running.key, besides=before)
        try:
            yield
        finally:
            self.pool.cut = None

    def _attack(self, job: Job, result: JobResult | None, first: GradeRecord) -> GradeRecord | None:
        """The record of what a short run of ``job`` (``result``; None: it gave none) showed against
        it: a fork server or driver it killed, or ``first`` blamed for the events tied to it; None
        when nothing was tied to it."""
        if result is not None and (result.killed_fork_server or result.killed_its_driver):
            return self._judged(result)
        events = self.guard.claim(job.key, () if result is None else result.processes)
        if not events:
            return None
        self.attackers.setdefault(job.key, []).extend(events)
        return blame_signals(replace(first), events)

    def _checked_together(self, jobs: list[Job]) -> Iterator[GradeRecord]:
        """Each of ``jobs`` (passed, and freed or kept in doubt) run briefly, all at once: the others of the batch are
        over, so whatever attack happens names only them. A job whose own processes did it is
        blamed at once; a job named by an attack that none of them is tied to (a stop) runs briefly
        alone again (:meth:`_checked`); the rest keep their records. Where no one attacks, which is
        the rule, that is one short run's time for all of them, not one each."""
        if len(jobs) < 2:
            for job in jobs:
                self.withdraw(job.key)
                yield from self._checked(job, self.first[job.key])
                self._doubt(cleared=[job.key])
            return
        for job in jobs:
            self.withdraw(job.key)
        self.pool.wait_until_quiet()
        with self._cut_when_named():
            results = {result.job.key: result
                       for result in self.pool.run(self._written_down(map(self._brief, jobs), short=True))}
        self.pool.wait_until_quiet()
        again = []
        for job in jobs:
            record = self._attack(job, results.get(job.key), self.first[job.key])
            if record is not None:
                yield record
            elif self.guard.suspicion()[job.key]:  # named by what none of them was tied to
                again.append(job)
                continue
            else:
                self.restore(self.first[job.key])
            self._doubt(cleared=[job.key])
        for job in again:
            yield from self._checked(job, self.first[job.key])
            self._doubt(cleared=[job.key])

    def _brief(self, job: Job) -> Job:
        """``job`` as a short run (:data:`CHECK_BUDGET`), which shows an attack, not a verdict."""
        options = replace(self.options, budget=min(self.options.budget, CHECK_BUDGET), max_elements=CHECK_MAX_ELEMENTS,
                          call_timeout=min(self.options.call_timeout, CHECK_CALL_TIMEOUT))
        return Job(job.key, job.entry, dict(job.payload, options=options.to_wire()))

    def _doubt(self, *, cleared: Iterable[str] = ()) -> None:
        """Write down every job with a record that is a suspect now, and the ``cleared`` ones no
        longer (grading.journal): should the grader die before they are settled, --resume does it."""
        if self.journal is None:
            return
        named = set(self.guard.suspicion()) if self.guard is not None else set()
        for key in named & set(self.first) - self._doubted - set(self.attackers):
            self._doubted.add(key)
            self.journal.doubted(self.by_key[key])
        for key in set(cleared) & self._doubted:
            self.journal.doubted(self.by_key[key], doubt=False)


def next_suspect(guard: SignalGuard, work: list[Job], done: set[str], seconds: dict[str, float]) -> Job | None:
    """The job to grade again alone next, or None: of those named by an event no job could be tied
    to (a stop, or an orphan's signal, while several ran) and not ``done`` (convicted, run again
    already, or not passed), the one named most often by events of one deed (:func:`most_of_one_deed`),
    the quickest first among equals: an attacker is named by each of its attacks, a neighbour only
    by those it ran beside."""
    named = most_of_one_deed(guard)
    candidates = [job for job in work if named[job.key] and job.key not in done]
    chosen = min(candidates, key=lambda job: (-named[job.key], seconds.get(job.key, math.inf)), default=None)
    if chosen is not None:
        note_event("suspect", key=chosen.key, named={job.key: named[job.key] for job in candidates})
    return chosen


def most_of_one_deed(guard: SignalGuard) -> Counter[str]:
    """For each job named by the events no job could be tied to, how many of one deed (a signal's
    number; a stop) name it, the most of any deed. Counted over every deed, a neighbour in flight
    beside two attackers of different deeds (an orphan's signals, a stopper's stops) was named more
    often than either, and was graded again alone, in full, before them: on an H100, 88 s of a
    hostile batch went to such runs after it."""
    guard.suspicion()  # every signal sent so far taken and judged
    by_deed = Counter((key, event.signum) for event in list(guard.events) for key in event.suspects)
    most: Counter[str] = Counter()
    for (key, _), count in by_deed.items():
        most[key] = max(most[key], count)
    return most
