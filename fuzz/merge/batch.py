"""An op's batch on disk: each record written as its candidate ends, ``--resume``, and the
verdict on a candidate that kills the grader.

Each candidate of ``grade --op`` runs in a child process of its own (:mod:`.child_run`), which is
still a child of the grader: it can SIGKILL the grader (``os.getppid()``), which nothing can block.
The command's supervisor (:mod:`fuzz.isolation.guard.supervisor`, as for the row LSE's batch) then
starts another grader with ``--resume``, and what this module keeps makes that restart a verdict
rather than a loop:

* every candidate file is read once, as a run starts (:mod:`fuzz.grading.snapshot`, the row LSE's
  batch's): a private copy of those bytes is what runs, so a candidate that writes to a neighbour's
  file changes nothing that is graded, and ``--resume`` grades as submitted a file changed while an
  earlier run was alive (``.submitted-<op>.json``, the heartbeat ``.alive-<op>``);
* the report (``grade-<op>.jsonl``) is rewritten, atomically and in the candidates' order, after
  every candidate, each record with the options' key and the sha256 of the bytes graded:
  ``--resume`` keeps the records whose key and file are unchanged and grades the rest;
* the journal (:class:`fuzz.grading.journal.Journal`, a file of the op's own) writes each candidate
  down before its child starts, beside others or alone. A run after a death first kills what the
  dead run's children left behind (by the run's token in their environment), then runs the
  candidates that were in flight, each alone, the one started last first; one that was running
  alone when the grader died gets ``crash`` instead of a third run. The others run side by side.

A killer thus costs a batch two restarts at most (one beside others, one alone), and the
neighbours in flight at the first death one run alone each.

With a guard (:class:`fuzz.isolation.SignalGuard`, which ``grade --op`` holds), the other signals a
candidate's process sends the grader (SIGTERM, SIGINT, ...) are ignored and make its verdict
``crash``; a stop of the grader is undone by the guard's watchdog and blamed on the candidate that
ran alone then. Ctrl-C and a signal from outside end the run: the children in flight (sessions of
their own, which the terminal's Ctrl-C does not reach) are killed and left unrecorded, for
``--resume`` to grade.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reference.errors import InvalidArgument

from .._version import __version__
from ..grading.candidates import Candidate
from ..grading.blame import what_it_did
from ..grading.journal import CONVICTED_DETAILS, CONVICTED_REASON, Journal
from ..grading.snapshot import TakenFiles, materialize, restore_paths, take
from ..isolation import SignalEvent, SignalGuard, forget, own_stops, remember
from ..outcomes import Verdict
from .child_run import ChildRun, run_in_child

__all__ = ["OpBatch", "options_key", "report_path"]

_VERDICT_OPTIONS = ("op", "budget", "seed", "device", "checks", "dtypes", "layouts", "profile", "shrink_seconds",
                    "lse_base")
"""The run options that decide a verdict (a record made with others is graded again on --resume)."""


def report_path(out: Path, op: str) -> Path:
    return Path(out) / f"grade-{op}.jsonl"


def _journal_name(op: str) -> str:
    return f".in-flight-{op}.jsonl"


def taken_files(op: str) -> TakenFiles:
    """The names of the files an op's batch keeps beside its report: their own, so a row LSE's batch
    and an op's can share one folder."""
    return TakenFiles(submitted=f".submitted-{op}.json", heartbeat=f".alive-{op}",
                      written=(report_path(Path(), op).name, _journal_name(op)))


def options_key(options: dict, *, function: str, timeout: float) -> str:
    """Identifies the options that decide verdicts, the tool's version among them."""
    data = {name: options.get(name) for name in _VERDICT_OPTIONS}
    data.update(function=function, timeout=timeout, tool=__version__)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


class OpBatch:
    """One run of an op's batch: ``records()`` grades what is not kept and returns every record."""

    def __init__(self, candidates: list[Candidate], options: dict, *, out: Path, key: str, timeout: float,
                 jobs: int, resume: bool, guard: SignalGuard | None = None) -> None:
        self.options, self.out, self.key, self.timeout, self.jobs = options, Path(out), key, timeout, jobs
        self.out.mkdir(parents=True, exist_ok=True)
        # Every file read now, as the batch starts: a candidate that writes to a neighbour's file
        # changes nothing that is graded, and a record names the bytes graded (grading.snapshot).
        self.submission = take(candidates, self.out, resume=resume, names=taken_files(options["op"]))
        self.candidates = self.submission.candidates
        self.path = report_path(out, options["op"])
        self.journal = Journal(self.out, key, name=_journal_name(options["op"]))
        self.kept = self._kept() if resume else {}
        self.resume = resume
        self._records: dict[str, dict] = dict(self.kept)
        self._lock = threading.Lock()
        self.guard = guard  # on: signals from a candidate's process are ignored, and blamed on it
        self._spans: dict[str, tuple[float, float | None]] = {}  # target: (start, end) of its run, end None in flight
        self._children: set[int] = set()  # the pids of the children in flight
        self._stopping = False  # the run is ending early: no record for what is still in flight
        self._sweep = _nothing  # tells the guard of a stop of this process found since the last look
        if guard is not None:
            guard.in_flight = self._in_flight

    def records(self) -> list[dict]:
        """Grade the candidates the report does not hold yet; every record, in the candidates' order."""
        pending = [c for c in self.candidates if c.target not in self.kept]
        self.journal.kill_leftovers()  # of a run that died unheard, before anything runs beside them
        convicted, suspects = self.journal.suspects(pending) if self.resume else ([], [])
        if not self.resume:
            self.journal.clear()
        for candidate in convicted:
            self._write(candidate, ChildRun(Verdict.CRASH, f"{Verdict.CRASH.label} {candidate.name} (--op "
                                                           f"{self.options['op']}): {CONVICTED_REASON}. {CONVICTED_DETAILS}"))
        try:
            # The children carry this run's token; the heartbeat tells a later run when this one was alive.
            with self.submission.grading(), self._stops(), _environment(self.journal.begin()):
                for candidate in suspects:  # alone, the one started last first
                    self._graded(candidate, alone=True)
                self._side_by_side([c for c in pending if c not in convicted and c not in suspects])
        finally:  # on Ctrl-C the children (sessions of their own) got nothing: killed, unrecorded
            self._stop_children()
            with self._lock:
                self._flush()
            self.journal.clear()  # this grader ended the run itself: nothing was in flight at its death
        return [self._records[c.target] for c in self.candidates if c.target in self._records]

    @contextlib.contextmanager
    def _stops(self):
        """Stops of this process while candidates run are told to the guard (the one alone is blamed)."""
        if self.guard is None:
            yield
            return
        with own_stops(self.guard, self._in_flight) as sweep:
            self._sweep = sweep
            try:
                yield
            finally:
                self._sweep = _nothing

    def _side_by_side(self, candidates: list[Candidate]) -> None:
        workers = max(1, min(self.jobs, len(candidates)))
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            list(pool.map(lambda c: self._graded(c, alone=workers == 1), candidates))
        finally:
            self._stop_children()  # an exception, Ctrl-C: the threads wait for nothing more
            pool.shutdown(wait=True)

    def _graded(self, candidate: Candidate, *, alone: bool) -> None:
        with self._lock:
            if self._stopping:
                return
            self._spans[candidate.target] = (time.monotonic(), None)
        self.journal.started(candidate, alone=alone)  # on disk before its child can kill us
        started, pids = time.perf_counter(), []

        def on_start(pid: int) -> None:
            remember(pid)  # a sender that exits at once is still known for the batch's
            pids.append(pid)
            with self._lock:
                self._children.add(pid)
                stopping = self._stopping
            if stopping:  # started as the run ends
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)

        # A private copy of the bytes taken as the batch started is what runs; the record names the original.
        private, originals = materialize(candidate, self.submission.sources.get(candidate.target))
        try:
            ended = run_in_child({**self.options, "target": private.target}, timeout=self.timeout,
                                 on_start=on_start)
        except InvalidArgument as exc:  # this candidate cannot be used; the batch goes on
            ended = ChildRun(Verdict.LOAD_ERROR, f"{Verdict.LOAD_ERROR.label} {candidate.name}: {exc}",
                             seconds=time.perf_counter() - started)
        self._sweep()  # a stop of the grader during its run is told now, while it still counts as in flight
        with self._lock:
            self._spans[candidate.target] = (self._spans[candidate.target][0], time.monotonic())
            self._children.difference_update(pids)
            if self._stopping:
                return
        if self.guard is not None:
            ended = _blamed(ended, self.guard.claim(candidate.target, processes=tuple(pids)),
                            f"{candidate.name} (--op {self.options['op']})")
        forget(pids)
        self._write(candidate, ended, originals)
        if alone:
            self.journal.ended(candidate)

    def _stop_children(self) -> None:
        """Kill the children in flight and record none of them: the run ends without their verdicts."""
        with self._lock:
            self._stopping = True
            children = list(self._children)
        for pid in children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    def _in_flight(self, since: float, until: float = math.inf) -> tuple[str, ...]:
        """The candidates in flight at any moment between ``since`` and ``until`` (``time.monotonic()``)."""
        with self._lock:
            return tuple(target for target, (start, end) in self._spans.items()
                         if start <= until and (end is None or end >= since))

    def _write(self, candidate: Candidate, ended: ChildRun, originals: dict | None = None) -> None:
        result = ended.result or {}
        record = {"candidate": candidate.name, "target": candidate.target, "op": self.options["op"],
                  "verdict": (ended.verdict or Verdict.INTERNAL_ERROR).value, "check": result.get("check"),
                  "seconds": round(ended.seconds, 3), "reproducer": result.get("reproducer"),
                  "report": ended.text or ended.internal, "result": ended.result,
                  "sha256": candidate.sha256, "key": self.key}
        record = restore_paths(record, originals or {})  # the private copy's paths named as the originals
        with self._lock:
            self._records[candidate.target] = record
            self._flush()

    def _flush(self) -> None:
        """The report as it stands, in the candidates' order, replaced atomically."""
        lines = [json.dumps(self._records[c.target], sort_keys=True) + "\n"
                 for c in self.candidates if c.target in self._records]
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        tmp.write_text("".join(lines))
        os.replace(tmp, self.path)

    def _kept(self) -> dict[str, dict]:
        """The records of an earlier run to keep: same options, same file bytes, a verdict."""
        by_target = {c.target: c for c in self.candidates}
        kept = {}
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return kept
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            candidate = by_target.get(record.get("target")) if isinstance(record, dict) else None
            if candidate is not None and record.get("key") == self.key and record.get("sha256") == candidate.sha256 \
                    and record.get("verdict") != Verdict.INTERNAL_ERROR.value:
                kept[candidate.target] = record
        return kept


def _nothing() -> None:
    pass


@contextlib.contextmanager
def _environment(variables: dict[str, str]):
    """``variables`` in this process's environment (its children's) for the block; as it was after."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _blamed(ended: ChildRun, events: list[SignalEvent], who: str) -> ChildRun:
    """A candidate whose process signalled the grader (ignored), or stopped it while it ran alone
    (continued), crashes, whatever its run said."""
    if not events:
        return ended
    graded = (ended.text or ended.internal or "").splitlines()[:1]
    return ChildRun(Verdict.CRASH, f"{Verdict.CRASH.label} {who}: it attacked the grader: it {what_it_did(events)}"
                    + (f" (graded anyway: {graded[0]})" if graded else ""), seconds=ended.seconds)
