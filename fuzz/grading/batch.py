"""Grading a batch: every candidate a job of the worker pool (or a task of a Ray cluster, see
:mod:`.ray_executor`), the report rewritten after each one.

Ctrl-C (or SIGTERM) stops the drivers and their workers and returns with ``interrupted``; the
report then holds every candidate finished so far, and ``--resume`` keeps those records whose
options and file are unchanged. The same signals from a candidate's own processes are ignored and
make its verdict a crash (:mod:`fuzz.isolation.guard.signals`; the local executor), as does stopping
the grading processes (the fork server, a driver, a neighbour's worker: :mod:`fuzz.isolation.guard.blame`).
What can only be told apart by time, when several candidates ran at that time, makes each of them
a suspect, settled after the batch without holding the others up (:mod:`.local_executor`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import defaults
from ..isolation import Pool, SignalEvent, SignalGuard, spread_over
from ..outcomes import Verdict
from .bench import measure_baselines
from .candidates import Candidate, schedule
from .evaluate import grading_job
from .journal import Journal, convicted_record
from .local_executor import LocalBatch
from .options import GradeOptions, driver_environment
from .ray_executor import grade_on_ray
from .record import GradeRecord
from .reports import REPORT_JSONL, read_records, write_reports
from .seal import seal, seal_key, sealed
from .snapshot import take

__all__ = ["DEFAULT_GRADE_TIMEOUT", "DRIVER_GRACE", "GradeRun", "grade", "reproducer_dir_for"]

DEFAULT_GRADE_TIMEOUT = defaults.GRADE_TIMEOUT
DRIVER_GRACE = 300.0
"""Seconds a driver may run past a candidate's timeout (oracle, shrinking) before it is killed."""


@dataclass
class GradeRun:
    records: list[GradeRecord]
    graded: int  # graded in this run (not resumed)
    resumed: int
    interrupted: bool
    stray_signals: list[SignalEvent] = field(default_factory=list)  # ignored, no candidate could be tied to them
    changed_while_graded: list[str] = field(default_factory=list)  # files graded as submitted (grading.snapshot)


def reproducer_dir_for(out: Path, candidate: Candidate) -> Path:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in candidate.name)[-80:]
    return out / "reproducers" / stem


def _kept(out: Path, candidates: list[Candidate], key: str,
          seal_with: bytes | None = None) -> dict[str, GradeRecord]:
    """Records of an earlier report that still hold: same file, same function, same options, and
    (with a private seed) the grader's seal intact (:mod:`.seal`)."""
    by_target = {c.target: c for c in candidates}
    kept = {}
    for record in read_records(out / REPORT_JSONL):
        candidate = by_target.get(record.target)
        if candidate is not None and record.key == key and record.sha256 is not None \
                and record.sha256 == candidate.sha256 \
                and record.verdict is not Verdict.INTERNAL_ERROR and sealed(record.to_json(), seal_with):
            kept[candidate.target] = replace(record, candidate=candidate.name)
    return kept


def _sealed(record: GradeRecord, key: bytes | None) -> GradeRecord:
    """``record`` with its seal (:mod:`.seal`; unchanged without a key)."""
    return record if key is None else GradeRecord.from_json(seal(record.to_json(), key))


def _resumed(candidates: list[Candidate], options: GradeOptions, out: Path, key: bytes | None,
             journal: Journal | None, *, resume: bool):
    """(The records kept, those convicted of the grader's death, its suspects, the candidates to
    grade: the suspects first, those whose kept records are in doubt) of a run (grading.journal);
    nothing is kept without ``resume``."""
    kept = _kept(out, candidates, options.key(), key) if resume else {}
    doubts = journal.in_doubt() if resume and journal is not None else set()
    # A record a dead run left in doubt (a suspect of a stop or of an orphan's signal) is kept, and
    # checked briefly after the batch: graded again in full, the in-doubt records of a grader killed
    # late (dozens, beside a stopper and an orphan's signals) held the batch up a minute.
    recheck = [c for c in candidates if c.target in kept and (c.target, kept[c.target].sha256) in doubts]
    pending = schedule(c for c in candidates if c.target not in kept)
    convicted, suspects = [], []
    if journal is not None:
        journal.kill_leftovers()  # of a run that died unheard, before anything runs beside them
        if resume:  # what was in flight when the grader died
            convicted, suspects = journal.suspects(pending)
            pending = suspects + [c for c in pending if c not in convicted and c not in suspects]
        else:
            journal.clear()
    return kept, [_sealed(convicted_record(c, options), key) for c in convicted], suspects, pending, recheck


def grade(
    candidates: list[Candidate],
    options: GradeOptions,
    *,
    out: Path,
    jobs: int | None = 1,
    resume: bool = False,
    progress: Callable[[GradeRecord, int, int], None] | None = None,
    executor: str = "local",
    ray_address: str | None = None,
) -> GradeRun:
    """Grade ``candidates`` with ``jobs`` drivers; reports under ``out`` after every candidate.

    ``executor="ray"`` grades each candidate as a task of a Ray cluster instead (see
    :mod:`fuzz.grading.ray_executor`; ``ray_address`` is the cluster's, ``jobs`` the most tasks
    submitted at once, None for all); the report is the same.
    """
    out.mkdir(parents=True, exist_ok=True)
    # Every file read now, as the batch starts: what is graded is what was submitted (grading.snapshot).
    submission = take(candidates, out, resume=resume)
    candidates = submission.candidates
    key = seal_key(options.private_seed)
    journal = Journal(out, options.key(), seal_with=key) if executor != "ray" else None
    kept, convicted, suspects, pending, recheck = _resumed(candidates, options, out, key, journal, resume=resume)
    records = dict(kept) | {record.target: record for record in convicted}
    graded = len(convicted)
    fresh: set[str] = set()  # graded in this run (a suspect graded again alone counts once)
    write_reports(records.values(), out)

    def withdraw(target: str) -> None:
        """Take a record off the report while its candidate is graded again: should the grader die
        meanwhile, --resume judges it as in flight then (grading.journal), not by the old record."""
        records.pop(target, None)
        write_reports(records.values(), out)

    def restore(record: GradeRecord) -> None:
        """Put a withdrawn record back as it was (a short run alone found nothing against it)."""
        records[record.target] = _sealed(record, key)
        write_reports(records.values(), out)

    # Signals are told apart by sender only in the local executor: the tree is this machine's.
    guard = SignalGuard() if (pending or recheck) and executor != "ray" else None
    if executor == "ray":
        records_of = _on_ray(pending, options, out=out, jobs=jobs, address=ray_address, sources=submission.sources)
    else:
        records_of = _on_this_machine(pending, options, out=out, jobs=1 if jobs is None else jobs,
                                      sources=submission.sources, guard=guard,
                                      journal=journal, alone={c.target for c in suspects},
                                      briefly={c.target for c in suspects} - (journal.checked() if journal else set()),
                                      recheck=recheck, kept={c.target: kept[c.target] for c in recheck},
                                      withdraw=withdraw, restore=restore)
    interrupted = False
    stray: list[SignalEvent] = []
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt) if pending or recheck else None
    try:
        with submission.grading(), guard if guard is not None else contextlib.nullcontext():
            if pending or recheck:
                with contextlib.closing(records_of()) as stream:  # closed at once on Ctrl-C: drivers or tasks go
                    for record in stream:
                        record = _sealed(record, key)
                        records[record.target] = record
                        graded += record.target not in fresh
                        fresh.add(record.target)
                        write_reports(records.values(), out)
                        if progress:
                            progress(record, len(records), len(candidates))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if guard is not None:
            stray = guard.claim(None)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        write_reports(records.values(), out)
        if journal is not None:
            journal.clear()  # the grader ended this run itself: nothing was in flight at its death
    return GradeRun(records=sorted(records.values(), key=lambda r: r.candidate), graded=graded,
                    resumed=len(kept), interrupted=interrupted, stray_signals=stray,
                    changed_while_graded=[c.name for c in submission.changed_while_graded])


def _hard_limit(options: GradeOptions) -> float:
    return (options.timeout or DEFAULT_GRADE_TIMEOUT) + DRIVER_GRACE


def _on_ray(pending: list[Candidate], options: GradeOptions, *, out: Path, jobs: int | None,
            address: str | None, sources: dict[str, str | None]) -> Callable[[], Iterator[GradeRecord]]:
    return lambda: grade_on_ray(pending, options, reproducer_dir=lambda c: reproducer_dir_for(out, c).resolve(),
                                hard_limit=_hard_limit(options), address=address, in_flight=jobs, sources=sources)


def _on_this_machine(pending: list[Candidate], options: GradeOptions, *, out: Path, jobs: int,
                     sources: dict[str, str | None], recheck: list[Candidate] = (),
                     **settle) -> Callable[[], Iterator[GradeRecord]]:
    """The local executor (:class:`.local_executor.LocalBatch`: ``settle`` holds its guard, journal,
    suspects of the grader's death, records kept in doubt and report callbacks): each candidate
    (and each of ``recheck``, briefly, after the batch) a job of a pool of ``jobs`` drivers."""

    def records() -> Iterator[GradeRecord]:
        baselines = None
        if options.bench and options.device.startswith("cuda"):
            baselines = measure_baselines(options)
        workers = max(1, min(jobs, len(pending) + len(recheck)))
        lock_dir = str(out.resolve()) if options.device.startswith("cuda") and workers > 1 else None
        work, again = ([grading_job(c.target, c, options.to_wire(), reproducer_dir_for(out, c).resolve(),
                                    source=sources[c.target], lock_dir=lock_dir, baselines=baselines)
                        for c in group] for group in (pending, recheck))
        journal = settle.get("journal")
        environ = driver_environment(options, dict(os.environ, **journal.begin()) if journal is not None else None)
        with Pool(workers, work_dir=out / ".drivers", timeout=_hard_limit(options), environ=environ,
                  gpus=spread_over(options.device)) as pool:
            yield from LocalBatch(work, {c.target: c for c in [*pending, *recheck]}, options, pool, recheck=again,
                                  **settle).records()

    return records


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
