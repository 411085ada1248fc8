"""Grading a batch: every candidate a job of the worker pool, the report rewritten after each one.

Ctrl-C (or SIGTERM) stops the drivers and their workers and returns with ``interrupted``; the
report then holds every candidate finished so far, and ``--resume`` keeps those records whose
options and file are unchanged.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import defaults
from ..isolation.gpus import spread_over
from ..isolation.pool import Job, JobResult, Pool
from ..outcomes import Outcome, Verdict
from .bench import measure_baselines
from .candidates import Candidate, schedule
from .evaluate import base_record
from .options import GradeOptions
from .reports import REPORT_JSONL, read_records, write_reports

__all__ = ["DEFAULT_GRADE_TIMEOUT", "DRIVER_GRACE", "GradeRun", "grade", "reproducer_dir_for"]

DEFAULT_GRADE_TIMEOUT = defaults.GRADE_TIMEOUT
DRIVER_GRACE = 300.0
"""Seconds a driver may run past a candidate's timeout (oracle, shrinking) before it is killed."""

GRADE_ENTRY = "fuzz.grading.evaluate:grade_job"


@dataclass
class GradeRun:
    records: list[dict]
    graded: int  # graded in this run (not resumed)
    resumed: int
    interrupted: bool


def reproducer_dir_for(out: Path, candidate: Candidate) -> Path:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in candidate.name)[-80:]
    return out / "reproducers" / stem


def _kept(out: Path, candidates: list[Candidate], key: str) -> dict[str, dict]:
    """Records of an earlier report that still hold: same file, same function, same options."""
    by_target = {c.target: c for c in candidates}
    kept = {}
    for record in read_records(out / REPORT_JSONL):
        candidate = by_target.get(record.get("target"))
        if candidate is not None and record.get("key") == key and record.get("sha256") == candidate.sha256 \
                and record["verdict"] != Verdict.INTERNAL_ERROR.value:
            kept[candidate.target] = dict(record, candidate=candidate.name)
    return kept


def job_record(result: JobResult, candidate: Candidate, options: GradeOptions) -> dict:
    """The record of a job: what the driver returned, or what became of the driver."""
    if result.outcome is Outcome.RETURNED and result.record is not None:
        return result.record
    record = base_record(candidate, options)
    verdict = Verdict.TIMEOUT if result.outcome is Outcome.TIMED_OUT else Verdict.INTERNAL_ERROR
    what = {Outcome.TIMED_OUT: "the grader stopped it", Outcome.RAISED: "the grader failed on it"}.get(
        result.outcome, "the grading driver died")
    if result.killed_fork_server or result.killed_its_driver:  # its doing, shown by running it alone
        verdict, what = Verdict.CRASH, "it attacked the grader"
    record.update(verdict=verdict.value, reason=f"{what}: {result.detail.splitlines()[0] if result.detail else ''}",
                  details=result.detail, seconds=round(result.seconds, 3))
    return record


def grade(
    candidates: list[Candidate],
    options: GradeOptions,
    *,
    out: Path,
    jobs: int = 1,
    resume: bool = False,
    progress: Callable[[dict, int, int], None] | None = None,
) -> GradeRun:
    """Grade ``candidates`` with ``jobs`` drivers; reports under ``out`` after every candidate."""
    out.mkdir(parents=True, exist_ok=True)
    kept = _kept(out, candidates, options.key()) if resume else {}
    records = dict(kept)
    pending = schedule(c for c in candidates if c.target not in kept)
    write_reports(out, records.values())
    baselines = None
    if options.bench and options.device.startswith("cuda") and pending:
        baselines = measure_baselines(options)
    jobs = max(1, min(jobs, len(pending))) if pending else 1
    lock_dir = str(out.resolve()) if options.device.startswith("cuda") and jobs > 1 else None
    by_key = {c.target: c for c in pending}
    work = [Job(c.target, GRADE_ENTRY, {"candidate": asdict(c), "options": options.to_wire(),
                                         "reproducer_dir": str(reproducer_dir_for(out, c).resolve()),
                                         "lock_dir": lock_dir, "baselines": baselines})
            for c in pending]
    hard_limit = (options.timeout or DEFAULT_GRADE_TIMEOUT) + DRIVER_GRACE
    graded = 0
    interrupted = False
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt) if pending else None
    try:
        if work:
            with Pool(jobs, work_dir=out / ".drivers", timeout=hard_limit,
                      gpus=spread_over(options.device)) as pool:
                for result in pool.run(work):
                    record = job_record(result, by_key[result.job.key], options)
                    records[record["target"]] = record
                    graded += 1
                    write_reports(out, records.values())
                    if progress:
                        progress(record, len(records), len(candidates))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        write_reports(out, records.values())
    return GradeRun(records=sorted(records.values(), key=lambda r: r["candidate"]), graded=graded,
                    resumed=len(kept), interrupted=interrupted)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
