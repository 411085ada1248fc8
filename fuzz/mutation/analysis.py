"""Mutation analysis: does the fuzz suite catch each planted bug?  (``lse-fuzz mutants``)

    from fuzz.mutation import run_mutation_analysis, write_reports
    report = run_mutation_analysis(seed=0)                   # every mutant in mutants.MUTANTS
    print(report.score, report.exit_code)                    # 100.0, 0 when every mutant is killed
    write_reports(report, "lse-fuzz-report")                 # mutation.json (Stryker), mutation.md

Steps:

1. The gate. The suite runs against the correct kernel, loaded the way every mutant is (the empty
   patch, ``mutants.UNMUTATED_TARGET``: the files of ``reference/`` as they are, in a shadow
   package): it must pass. That is ``reference.lse`` itself, source for source, so the gate does
   not run ``reference:lse`` again: the same kernel on the same examples compiled the same binaries
   a second time, at the same moments, on a GPU. It runs against a deliberately broken double
   (``fuzz.mutation.gate:lse_plus_one``): it must be caught. Otherwise the suite cannot tell right from wrong and no mutant is scored
   (:class:`GateFailure`). The gate uses the mutants' budget, seed and checks: Hypothesis then
   draws the same examples for a mutant as for the correct kernel up to the mutant's first
   failure, so every example a mutant failed on (before shrinking) is one the unmutated kernel passed.
   On a GPU the examples come in :data:`fuzz.grading.parts.GPU_PARTS` parts of derived seeds
   (:func:`_gate_parts`): the gate runs each part of a correct implementation as a job of its own,
   side by side, so its compiles (most of a cold gate) share the host's cores; a mutant runs the
   same parts one after another in its job and stops at the first that fails.
2. Every mutant is graded exactly like a candidate of ``lse-fuzz grade`` (the same job of the one
   worker pool, :func:`fuzz.grading.evaluate.grade_job`: the mutant in an isolated worker, the
   fuzzer in a driver). A job that runs past ``max(timeout_factor * baseline, timeout_floor)``
   (baseline: the slowest correct run of the gate) is stopped. Mutants start on the drivers the
   gate leaves free, before the gate ends, but none is scored unless it passes.
3. :func:`fuzz.outcomes.mutant_status` maps each grading record to a status.
4. The reports (:mod:`.report`): a terminal table, Stryker JSON, Markdown.

Score (Stryker's definition): detected / valid, in percent, where detected = Killed + Timeout and
valid = every mutant except CompileError and RuntimeError (those never ran to a verdict).

Exit code of ``lse-fuzz mutants``: 0 when every mutant is Killed; 1 when any is not (Survived,
Timeout, RuntimeError or CompileError: each planted bug should be caught by a check, so even a
timeout, which counts as detected in the score, is a failure of this suite); 2 when the gate
fails or the arguments are invalid.

Kill matrix (``matrix=True``): every mutant against each check alone, so the report shows which
checks carry weight and which mutants only one check catches.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from mutants import MUTANTS, UNMUTATED_TARGET, Mutant
from reference.errors import InvalidArgument

from .. import defaults, validate
from ..checks import validate_checks
from ..grading.evaluate import GRADE_ENTRY, base_record, job_record
from ..grading.candidates import Candidate
from ..grading.options import GradeOptions
from ..grading.parts import decided, merge_parts, part_count, split
from ..isolation import Job, Pool, spread_over
from ..strategies import Contract
from ..target import resolve_target
from .results import Cell, GateFailure, GateResult, MutantResult, MutationReport

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_OUT_DIR",
    "DEFAULT_TIMEOUT_FACTOR",
    "DEFAULT_TIMEOUT_FLOOR",
    "GATE_BROKEN",
    "GATE_CORRECT",
    "run_mutation_analysis",
]

DEFAULT_BUDGET = defaults.MUTANT_BUDGET
DEFAULT_TIMEOUT_FACTOR = defaults.MUTANT_TIMEOUT_FACTOR
DEFAULT_TIMEOUT_FLOOR = defaults.MUTANT_TIMEOUT_FLOOR
DEFAULT_OUT_DIR = Path(defaults.OUT_DIR)
GATE_TIMEOUT = 600.0
"""Seconds any job may take until the gate has measured the baseline."""

GATE_CORRECT: tuple[tuple[str, str], ...] = (
    ("reference.lse, as the mutants' base (the empty patch)", UNMUTATED_TARGET),
)
"""(label, target) of the correct implementations the suite must pass."""

GATE_BROKEN: tuple[tuple[str, str], ...] = (
    ("reference.lse + 1", "fuzz.mutation.gate:lse_plus_one"),
)
"""(label, target) of the deliberately broken implementations the suite must catch."""


def _gate_parts(options: GradeOptions) -> int:
    """The parts a mutant's examples come in: one on the CPU, where the pool runs the gate's correct
    implementations on a core each already and a run is bound by the interpreter; the device's
    default on a GPU, where a cold gate is bound by compiles (see :mod:`fuzz.grading.parts`)."""
    if options.device.startswith("cpu"):
        return 1
    return part_count(replace(options, parts=None))


def _resolve_mutants(mutants) -> list:
    """The mutants to run: names in the registry, :class:`mutants.Mutant` objects, or anything
    else with a ``name``, ``pitfall``, ``source``, ``expected_check`` and a loadable ``target``
    (the test suite plants implementations with known statuses that way)."""
    if mutants is None:
        return list(MUTANTS.values())
    if isinstance(mutants, str) or hasattr(mutants, "target"):
        mutants = [mutants]
    chosen = []
    for item in mutants:
        if isinstance(item, Mutant) or (not isinstance(item, str) and hasattr(item, "target")):
            chosen.append(item)
        elif isinstance(item, str) and item in MUTANTS:
            chosen.append(MUTANTS[item])
        else:
            raise InvalidArgument(
                f"mutant {item!r} is not in mutants.MUTANTS; choose from: {', '.join(MUTANTS)} "
                "(or pass mutants.Mutant objects)."
            )
    if not chosen:
        raise InvalidArgument("mutants=[]; expected at least one mutant name (or None for all).")
    names = [m.name for m in chosen]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidArgument(f"mutants: {', '.join(duplicates)} given twice; each mutant runs once.")
    return chosen


class _Limits:
    """The seconds a job may run: the gate's generous limit until the gate has measured its
    baseline, then max(factor * baseline, floor) for the mutants (gate jobs keep theirs)."""

    def __init__(self) -> None:
        self.mutant = GATE_TIMEOUT

    def __call__(self, job: Job) -> float:
        return GATE_TIMEOUT if job.key.startswith("gate") else self.mutant


def run_mutation_analysis(
    mutants: Iterable | None = None,
    *,
    jobs: int | None = None,
    budget: int = DEFAULT_BUDGET,
    seed: int = 0,
    device: str | None = None,
    contract: str = "strict",
    timeout_factor: float = DEFAULT_TIMEOUT_FACTOR,
    timeout_floor: float = DEFAULT_TIMEOUT_FLOOR,
    matrix: bool = False,
    checks: Iterable[str] | None = None,
    out_dir: Path | str | None = DEFAULT_OUT_DIR,
    max_elements: int | None = None,
    parts: int | None = None,
    gate_correct: Sequence[tuple[str, str]] = GATE_CORRECT,
    gate_broken: Sequence[tuple[str, str]] = GATE_BROKEN,
    progress: Callable[[str, int, int], None] | None = None,
) -> MutationReport:
    """Gate the suite, grade every mutant in the worker pool, and return the report.

    ``mutants``: names in :data:`mutants.MUTANTS` or :class:`mutants.Mutant` objects (default:
    all). ``jobs``: drivers at once (default: the CPU count). ``budget``, ``seed``, ``device``,
    ``contract``, ``checks``, ``max_elements``: the fuzzer's options for every job (the gate's
    too). A job is stopped after ``max(timeout_factor * baseline_seconds, timeout_floor)``
    seconds, the baseline being the slowest correct run of the gate. ``matrix``: each selected
    check alone against every mutant. ``parts``: the runs of derived seeds a mutant's examples
    come in (default: one on the CPU, four on a GPU). ``out_dir``: where the reproducers of the
    counterexamples go (``out_dir/reproducers``; None: a temporary directory, removed afterwards).
    ``gate_correct``/``gate_broken``: (label, target) pairs the suite must pass / catch.
    ``progress(phase, done, total)`` is called as jobs finish. Raises :class:`GateFailure` when
    the gate fails, InvalidArgument for bad arguments.
    """
    setup_started = time.perf_counter()
    chosen = _resolve_mutants(mutants)
    jobs = (os.cpu_count() or 1) if jobs is None else validate.integer(jobs, name="jobs", low=1)
    validate.integer(budget, name="budget", low=1)
    validate.integer(seed, name="seed", low=0)
    timeout_factor = validate.number(timeout_factor, name="timeout_factor", low=0)
    timeout_floor = validate.number(timeout_floor, name="timeout_floor", low=1)
    contract = Contract.parse(contract).value
    device = str(validate.device(device))
    if max_elements is not None:
        validate.integer(max_elements, name="max_elements", low=1)
    selected = validate_checks(checks)
    if not gate_correct or not gate_broken:
        raise InvalidArgument("the gate needs at least one correct and one broken implementation.")
    options = GradeOptions(budget=budget, seed=seed, contract=contract, checks=None if checks is None else selected,
                           device=device, max_elements=max_elements, jobs=jobs,
                           fit_shapes=False, parts=parts).validated()  # every mutant meets the same examples
    if parts is None:
        options = replace(options, parts=_gate_parts(options))
    count = part_count(options)

    keep = out_dir is not None
    base = (Path(out_dir) if keep else Path(tempfile.mkdtemp(prefix="lse-mutants-"))).resolve()
    base.mkdir(parents=True, exist_ok=True)
    reproducers = base / "reproducers"
    config = {"budget": budget, "seed": seed, "device": device, "contract": contract, "jobs": jobs, "parts": count,
              "timeout_factor": timeout_factor, "timeout_floor": timeout_floor, "matrix": matrix,
              "max_elements": max_elements, "checks": list(selected)}

    gate_entries = [(label, resolve_target(target), "pass") for label, target in gate_correct]
    gate_entries += [(label, resolve_target(target), "fail") for label, target in gate_broken]
    cells = [(name,) for name in selected] if matrix else [None]

    def job(key: str, target: str, only: tuple[str, ...] | None, job_options: GradeOptions = options) -> Job:
        if only is not None:
            job_options = GradeOptions(**{**asdict(job_options), "checks": only})
        candidate = Candidate.of_target(target)
        return Job(key, GRADE_ENTRY, {"candidate": asdict(candidate), "options": job_options.to_wire(),
                                      "reproducer_dir": str(reproducers), "lock_dir": None, "baselines": None})

    # A correct implementation's parts run side by side, as jobs of their own ("gate0p1"); a broken
    # one, like a mutant, runs its parts in turn and stops at the first failure.
    each = split(options, count, max_elements=max_elements) if count > 1 else [options]
    gate_jobs = []
    for i, (_, target, must) in enumerate(gate_entries):
        if must == "pass" and len(each) > 1:
            gate_jobs += [job(f"gate{i}p{k}", target, None, part) for k, part in enumerate(each)]
        else:
            gate_jobs.append(job(f"gate{i}", target, None))
    mutant_jobs = [job(f"m{i}-{k}", resolve_target(m.target), only)
                   for i, m in enumerate(chosen) for k, only in enumerate(cells)]
    limits = _Limits()
    results: dict[str, Cell] = {}
    setup_seconds = time.perf_counter() - setup_started
    gate_started = time.perf_counter()
    gate_ended = None
    work_dir = Path(tempfile.mkdtemp(prefix=".work-", dir=base))
    try:
        # The gate and the mutants share one pool, gate first: mutants start on the drivers the gate
        # leaves free instead of waiting for it (on a GPU the gate is mostly compile time).
        with Pool(jobs, work_dir=work_dir, timeout=limits, gpus=spread_over(options.device)) as pool:
            if progress:
                progress("gate", 0, len(gate_jobs))
            for result in pool.run(gate_jobs + mutant_jobs):
                key = result.job.key
                candidate = Candidate(**result.job.payload["candidate"])
                record = job_record(result, candidate, options)
                only = result.job.payload["options"]["checks"]
                results[key] = Cell(tuple(only) if only else (), record, result.seconds)
                done_gate = sum(k.startswith("gate") for k in results)
                if key.startswith("gate"):
                    if progress:
                        progress("gate", done_gate, len(gate_jobs))
                    if done_gate == len(gate_jobs):
                        gate = [GateResult(label, target, must, _gate_cell(results, i, len(each), target, options))
                                for i, (label, target, must) in enumerate(gate_entries)]
                        gate_ended = time.perf_counter()
                        if not all(entry.ok for entry in gate):
                            raise GateFailure(gate)
                        baseline = max(entry.cell.wall_seconds for entry in gate if entry.must == "pass")
                        limits.mutant = max(timeout_factor * baseline, timeout_floor)
                elif progress:
                    progress("mutants", len(results) - done_gate, len(mutant_jobs))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    assert gate_ended is not None
    mutation_seconds = time.perf_counter() - gate_ended  # the mutants' time beyond the gate's
    outcome = [MutantResult.of(m, [results[f"m{i}-{k}"] for k in range(len(cells))], matrix)
               for i, m in enumerate(chosen)]
    return MutationReport(results=outcome, gate=gate, config=config, baseline_seconds=baseline,
                          timeout_seconds=limits.mutant, gate_seconds=gate_ended - gate_started,
                          mutation_seconds=mutation_seconds, setup_seconds=setup_seconds, matrix=matrix)


def _gate_cell(results: dict[str, Cell], index: int, parts: int, target: str, options: GradeOptions) -> Cell:
    """The gate's cell of entry ``index``: its job's, or its parts' jobs merged into one record; its
    wall seconds are the parts' sum, the time a mutant that runs them in turn needs (the baseline
    of the mutants' time limit)."""
    if f"gate{index}" in results:
        return results[f"gate{index}"]
    cells = [results[f"gate{index}p{k}"] for k in range(parts)]
    record = merge_parts(base_record(Candidate.of_target(target), options), decided([c.record for c in cells]))
    return Cell(cells[0].checks, record, sum(cell.wall_seconds for cell in cells))
