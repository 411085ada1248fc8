"""Judging the mutants of one run: coverage, the first pass, the user's tests, and the second phase
(a timed-out run once more with a longer limit, a survivor again with the ``lse-thorough`` profile),
every verdict cached. :func:`judge` is called by :func:`fuzz.mutation.run_mutation` once per run
(once per check in a kill matrix), with the run's pool, kernel, cache and limits."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ..grading.options import GradeOptions, MemoryPhase
from ..grading.record import GradeRecord
from ..memory import MEMORY_CHECKS
from ..defaults import GRADE_TIMEOUT as GATE_LIMIT
from ..outcomes import MutantStatus, Verdict
from .cache import verdict_key
from .loading import coverage_target, mutant_target, read_coverage
from .mutant import Mutant
from .results import Cell, TestsVerdict

__all__ = ["LINES_JOB", "LINE_NOT_RUN", "RETRY_FACTOR", "covered", "judge", "mutant_options",
           "needs_lines", "never_ran", "no_coverage_cell", "tests_record"]

RETRY_FACTOR = 4.0
"""A mutant that timed out is run once more, with this many times its limit, before Timeout is its
verdict. Stryker counts a Timeout as detected (an endless loop is a bug), so a timeout that only
load caused is a kill the mutant never earned: on a GPU every mutant compiles its kernels anew, and
with one run per core the compiles of its neighbours slow its own (on two H200s, two mutants of
``two_pass.py`` the CPU had run to the end, one of them equivalent, timed out at three times the
gate's run). The second run starts in the pool's second phase, beside the survivors' re-runs only."""

LINES_JOB = "gate-lines"
"""The key of the traced run of the unmutated kernel (its lines are the coverage of a CPU run)."""
UNDECIDED = (MutantStatus.SURVIVED, MutantStatus.TIMEOUT)
"""The statuses a mutant whose edit never ran can have; every other one shows the edit ran."""

LINE_NOT_RUN = "the mutated line never ran on any generated input (coverage of the unmutated kernel's gate run)"


def no_coverage_cell(mutant: Mutant, device: str) -> Cell:
    reason = LINE_NOT_RUN
    if mutant.kernel and not device.startswith("cpu"):
        wanted = " and ".join(f"{name}={want}" for name, want in mutant.guards)
        reason = (f"its static branch never ran: no launch of {mutant.function} in the unmutated kernel's gate "
                  f"run had {wanted} (compiled kernels have no line coverage; their constexprs say this)")
    record = GradeRecord(candidate=mutant.name, target=mutant.name, sha256=None, key="", verdict=Verdict.NOT_RUN,
                         reason=reason, examples=0)
    return Cell((), record, 0.0)


def covered(mutant: Mutant, paths: dict[str, str], lines: dict[str, set[int]], device: str,
            launches: dict[str, list[dict]] | None = None) -> bool:
    """Whether the gate's run of the unmutated kernel ran the mutant's edit (``paths``: the kernel's
    files on disk by key; ``lines``: the lines that ran, by real path; ``launches``: the constexpr
    values of each kernel's launches)."""
    if mutant.kernel and not device.startswith("cpu"):
        # A compiled kernel runs no Python lines; but a site in a static branch (`if PARTIALS:`) of a
        # launched kernel ran only if some launch of the gate's run gave that constexpr the value.
        runs = (launches or {}).get(mutant.function)
        if not mutant.guards or not runs:
            return True  # unknown (a helper function, or no launch recorded): run it
        return any(all(bool(run.get(name)) == want for name, want in mutant.guards) for run in runs)
    ran = lines.get(os.path.realpath(paths[mutant.file]))
    if ran is None:
        # A gate kept in the verdict cache ran the same kernel text elsewhere (a fresh clone, a moved
        # checkout): its lines are this file's, under that place's path.
        ran = next((found for path, found in lines.items() if path.endswith(os.sep + mutant.file)), set())
    first, last = mutant.statement
    return any(line in ran for line in range(first, last + 1))


def needs_lines(mutant: Mutant, device: str) -> bool:
    """Whether only the traced run's lines can tell whether ``mutant``'s edit ran (on a GPU, the
    gate's launches tell it for an edit in a compiled kernel)."""
    return not (mutant.kernel and not device.startswith("cpu"))


def never_ran(run, mutant: Mutant, device: str) -> bool:
    """Whether what is known of the gate's run (its launches; the traced run's lines, once made)
    shows that ``mutant``'s edit never ran. Unknown is False: the mutant is judged by running it."""
    if run.launches is None or (run.lines is None and needs_lines(mutant, device)):
        return False
    return not covered(mutant, run.kernel.paths, run.lines or {}, device, run.launches)


def mutant_options(options: GradeOptions, mutant: Mutant) -> GradeOptions:
    """The options ``mutant`` is judged under. On a GPU the memory phase costs two processes under
    compute-sanitizer per run; a mutant is killed by the first check that fails, so the phase starts
    only where it can decide the kill (the fuzzing passed, or the GPU reported a kernel fault), or
    where the mutant's documented check is a memory check: then that check's tool starts beside the
    fuzzing and names the stray access after a value check's failure too, as the CPU names it; the
    other tool starts only where the phase would start for any mutant. In a cold analysis on a
    16-CPU H100 host, a memory mutant's phase took 13-19 s with both tools, 10-14 s with its own."""
    if not options.device.startswith("cuda"):
        return options
    if mutant.expected_check in MEMORY_CHECKS:
        return replace(options, memory_checks=(mutant.expected_check,))
    return replace(options, memory=MemoryPhase.AFTER_PASS)


def tests_record(result) -> dict:
    """A ``--tests`` job's record; a job the pool stopped is a timeout."""
    if result.record is not None:
        return result.record
    return {"exit": None, "timeout": True, "seconds": round(result.seconds, 3), "output": result.detail}


def _stored(cell: Cell, **extra) -> dict:
    return {"record": cell.record.to_json(), "wall": cell.wall_seconds, **extra}


def judge(run, mutants: list[Mutant], options: GradeOptions, *, gate=None, with_tests: bool = True,
          step: str = "mutants") -> tuple[dict[str, Cell], dict[str, TestsVerdict], set[str], set[str]]:
    """(name -> cell), (name -> the user's tests' verdict), the names graded again thoroughly, and
    those run again after a timeout. ``gate``: a :class:`fuzz.mutation.runner.Gate` whose jobs, if
    it has not decided yet, run first in the same pool: the mutants' first pass starts beside them,
    with the gate's time limit until it has measured the baseline, and a mutant whose edit its
    coverage shows never ran is NoCoverage whatever that pass found."""
    kernel, store = run.kernel, run.store
    thorough = run.thorough
    cells: dict[str, Cell] = {}
    verdicts: dict[str, TestsVerdict] = {}
    thorough_names: set[str] = set()
    retried: set[str] = set()
    thorough_key = None if thorough is None else thorough.key()
    keys = {m.name: verdict_key("verdict", m.key, kernel.digest, options.key(), thorough_key) for m in mutants}
    # A survivor's or a timed-out mutant's first pass, kept apart from its verdict (the second run
    # decides that): a run stopped in its second phase (Ctrl-C, a lease that ends) starts there again.
    first_keys = {m.name: verdict_key("first-pass", m.key, kernel.digest, options.key()) for m in mutants}
    tests = run.tests if with_tests else None
    tests_keys = {m.name: verdict_key("tests", m.key, kernel.digest, tests, str(run.root)) for m in mutants} \
        if tests else {}
    pending = run.launches is None  # the gate has not decided: every mutant's first pass runs
    jobs, survivors, timed_out = _first_pass_jobs(run, mutants, options, keys, first_keys, pending, cells,
                                                  thorough_names, retried)
    ran = [job.key.partition(":")[2] for job in jobs]
    jobs += _tests_jobs(run, mutants, tests_keys, verdicts)

    def limits() -> None:  # once the gate has measured its baselines (until then, the gate's limit)
        run.limits.update({j.key: run.tests_limit if j.key.startswith("tests:") else run.fuzz_limit for j in jobs})

    gate_jobs = gate.jobs if pending and gate is not None else []
    if not pending:
        limits()
    done = 0
    for result in run.pool.run(gate_jobs + jobs):
        kind, _, name = result.job.key.partition(":")
        if kind.startswith("gate-"):
            gate.take(result)
            if run.launches is not None:
                limits()
            continue
        done += 1
        if kind == "tests":
            record = tests_record(result)
            verdicts[name] = TestsVerdict.of(record)
            store.put(tests_keys[name], record)
        else:
            cell = cells[name] = Cell((), run.record(result, options), result.seconds)
            if cell.status is MutantStatus.TIMEOUT or (cell.status is MutantStatus.SURVIVED and thorough is not None):
                (timed_out if cell.status is MutantStatus.TIMEOUT else survivors).append(name)
                store.put(first_keys[name], _stored(cell))
            else:
                store.put(keys[name], _stored(cell))
        run.tick(step, done, len(jobs))
    by_name = {m.name: m for m in mutants}
    # Only a mutant that survived or timed out may not have run its edit: any other verdict shows it did.
    suspects = [n for n in ran if cells[n].status in UNDECIDED] + [n for n in survivors + timed_out if n not in ran]
    _uncovered(run, [by_name[n] for n in suspects], options, cells, keys, survivors, timed_out, thorough_names, retried)
    left = [by_name[n] for n in suspects if n in survivors or n in timed_out or cells[n].status in UNDECIDED]
    lines_job = _lines_job(run, left, options)
    _again(run, by_name, options, timed_out, survivors, cells, keys, thorough_names, retried, lines_job)
    if lines_job is not None:
        _uncovered(run, [by_name[n] for n in suspects], options, cells, keys, survivors, timed_out, thorough_names,
                   retried)
    return cells, verdicts, thorough_names, retried


def _first_pass_jobs(run, mutants, options, keys, first_keys, pending, cells, thorough_names, retried):
    """The first pass's jobs, and the names of the survivors and timeouts whose first pass an earlier
    run kept (their second run is left); kept verdicts go into ``cells``, and a mutant the known
    coverage shows never ran its edit is NoCoverage without a run."""
    jobs, survivors, timed_out = [], [], []
    for mutant in mutants:
        kept = run.store.get(keys[mutant.name])
        cell = None if kept is None else Cell.kept(kept["record"], kept["wall"])
        first = None if cell is not None else run.store.get(first_keys[mutant.name], reuse=False)
        first = None if first is None else Cell.kept(first["record"], 0.0)
        if cell is not None:
            cells[mutant.name] = cell
            if kept.get("thorough"):
                thorough_names.add(mutant.name)
            if kept.get("retried"):
                retried.add(mutant.name)
        elif first is not None and first.status is MutantStatus.TIMEOUT:
            timed_out.append(mutant.name)  # timed out in an earlier run's first pass: its second run is left
        elif first is not None and run.thorough is not None:
            survivors.append(mutant.name)  # survived its first pass in an earlier run: the re-run is left
        elif not pending and never_ran(run, mutant, options.device):
            cells[mutant.name] = no_coverage_cell(mutant, options.device)
            run.store.put(keys[mutant.name], _stored(cells[mutant.name]))
        else:
            jobs.append(run.grade_job(f"fuzz:{mutant.name}", mutant_target(run.kernel, mutant),
                                      mutant_options(options, mutant)))
    return jobs, survivors, timed_out


def _tests_jobs(run, mutants: list[Mutant], keys: dict[str, str], verdicts: dict[str, TestsVerdict]) -> list:
    """The ``--tests`` jobs of the mutants whose verdict is not cached (those are put in ``verdicts``)."""
    jobs = []
    for mutant in mutants if keys else ():
        kept = run.store.get(keys[mutant.name])
        if kept is not None:
            verdicts[mutant.name] = TestsVerdict.of(kept)
            continue
        files = {str(Path(run.kernel.paths[mutant.file]).resolve().relative_to(run.root)):
                 mutant.mutated_sources()[mutant.file]}
        jobs.append(run.tests_job(f"tests:{mutant.name}", files, mutant.name, None))
    return jobs


def _uncovered(run, suspects: list[Mutant], options, cells, keys, survivors, timed_out, thorough_names,
               retried) -> None:
    """A suspect (it survived or timed out) whose edit what is known of the gate's run shows never
    ran is NoCoverage (with the same examples it can only have survived), not run again."""
    for mutant in suspects:
        name = mutant.name
        if name in cells and cells[name].status in UNDECIDED and never_ran(run, mutant, options.device):
            cells[name] = no_coverage_cell(mutant, options.device)
            run.store.put(keys[name], _stored(cells[name]))
            for waiting in (survivors, timed_out):
                if name in waiting:
                    waiting.remove(name)
            thorough_names.discard(name)
            retried.discard(name)


def _lines_job(run, suspects: list[Mutant], options):
    """The traced run of the unmutated kernel, when a suspect's coverage needs its lines and no run
    has traced them yet (None otherwise). It has the gate's examples and limit."""
    if run.lines is not None or not any(needs_lines(m, options.device) for m in suspects):
        return None
    job = run.grade_job(LINES_JOB, coverage_target(run.kernel, run.work / "coverage.jsonl"), run.options)
    run.limits[job.key] = GATE_LIMIT
    return job


def _take_lines(run, result) -> None:
    """The traced run's lines, once it passed as the gate's run did (kept in the verdict cache); a
    run that did not pass leaves them unknown, and then no suspect is NoCoverage."""
    if run.record(result, run.options).verdict is Verdict.PASS:
        lines = read_coverage(run.work / "coverage.jsonl")
        run.lines = lines
        run.store.put(run.lines_key, {f: sorted(found) for f, found in lines.items()})


def _again(run, by_name, options, timed_out, survivors, cells, keys, thorough_names, retried, lines_job=None) -> None:
    """The second phase, in rounds: a run that timed out is run once more with RETRY_FACTOR times its
    limit (a first pass or a survivor's re-run alike); a survivor is re-run thoroughly, with the
    patience its first pass needed. A verdict is kept when neither applies. ``lines_job``, the
    traced run, goes first in the first round (it is the longest job)."""
    thorough = run.thorough
    scale = max(1.0, thorough.budget / max(1, options.budget)) if thorough is not None else 1.0
    pending = [(name, False, RETRY_FACTOR) for name in timed_out] + [(name, True, 1.0) for name in survivors]
    rounds = 0
    extra = [] if lines_job is None else [lines_job]
    while pending or extra:
        rounds += 1
        patience_of = {(name, deep): patience for name, deep, patience in pending}
        again = [run.grade_job(f"{'thorough' if deep else 'retry'}:{name}", mutant_target(run.kernel, by_name[name]),
                               mutant_options(thorough if deep else options, by_name[name])) for name, deep, _ in pending]
        run.limits.update({job.key: run.fuzz_limit * patience * (scale if deep else 1.0)
                           for job, (_, deep, patience) in zip(again, pending)})
        pending, first, extra = [], extra, []
        done = 0
        for result in run.pool.run(first + again):
            if result.job.key == LINES_JOB:
                _take_lines(run, result)
                continue
            done += 1
            kind, _, name = result.job.key.partition(":")
            deep = kind == "thorough"
            patience = patience_of[(name, deep)]
            cell = cells[name] = Cell((), run.record(result, thorough if deep else options), result.seconds)
            run.tick("again" if rounds == 1 else f"again {rounds}", done, len(again))
            if patience > 1.0 or cell.status is MutantStatus.TIMEOUT:
                retried.add(name)
            if cell.status is MutantStatus.TIMEOUT and patience < RETRY_FACTOR:
                pending.append((name, deep, RETRY_FACTOR))
            elif not deep and cell.status is MutantStatus.SURVIVED and thorough is not None:
                pending.append((name, True, patience))
            else:
                if deep:
                    thorough_names.add(name)
                run.store.put(keys[name], _stored(cell, thorough=deep, retried=name in retried))
