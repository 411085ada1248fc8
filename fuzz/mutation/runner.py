"""The one runner: does the fuzzer (and do your tests) notice each mutant of a kernel?

    from fuzz.mutation import mutation_options, run_mutation
    report = run_mutation("path/to/kernel.py:lse", tests="pytest -q tests/test_kernel.py")
    report = run_mutation("nd.py:lse", options=mutation_options(ndim=3, dim=1, budget=100))
    report = run_mutation(source="catalog")          # the bundled mutants of reference:lse
    report.score, report.exit_code, report.reused    # Stryker's score; by the preset's rule; cache hits

Steps:

1. The mutants: the operators applied at every site of the kernels TARGET reaches
   (:mod:`.sites`), or the bundled catalog (:mod:`.bundled`, edits of ``reference:lse``).
2. The gate, on the one worker pool: the unmutated kernel must pass the fuzzer (its launches
   recorded: a compiled kernel's coverage), and the kernel plus one must fail it; with ``tests``,
   the user's command must pass on the unmutated kernel. Otherwise nothing is scored
   (:class:`GateFailure`). The mutants' first pass starts on the drivers the gate leaves free.
3. A mutant whose edit never ran is NoCoverage (not scored): known from the gate's launches, or
   from a run of the unmutated kernel with its lines traced, made only when a mutant survives or
   times out (every other verdict shows the edit ran). The others are graded exactly like a
   candidate of ``lse-fuzz grade`` (isolated worker, the fuzzer in a driver), stopped after
   ``max(timeout_factor * baseline, timeout_floor)`` seconds; with ``tests``, the command runs
   against each mutant too (exit status 0: it survived the tests). ``matrix``: each check alone.
4. A run that timed out is run once more with :data:`RETRY_FACTOR` times its limit; a survivor is
   graded again with the ``lse-thorough`` profile and ``thorough_budget`` examples (by default
   sized to the device: :func:`default_thorough_budget`).
5. Every verdict is cached (:mod:`.cache`); a re-run judges only the mutants whose inputs changed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from reference.errors import InvalidArgument

from .. import defaults, validate
from ..checks import validate_checks
from ..grading.candidates import Candidate
from ..grading.evaluate import GRADE_ENTRY, job_record
from ..grading.options import GradeOptions, MemoryPhase
from ..grading.record import GradeRecord
from ..isolation import Job, Pool, spread_over
from ..outcomes import MutantStatus, Verdict
from ..profiles import PROFILES
from ..strategies import default_max_elements
from .cache import VerdictCache, verdict_key
from .bundled import REFERENCE_TARGET, catalog
from .judge import judge, tests_record
from .loading import broken_target, gate_target, read_launches
from .mutant import Mutant
from .patch import cache_dir
from .results import Cell, ExitRule, GateFailure, GateResult, MutantResult, MutationReport, TestsVerdict
from .sites import Kernel, discover, generate

__all__ = ["CACHE", "CPU_THOROUGH_BUDGET", "DEFAULT_BUDGET", "GATE_TIMEOUT", "GPU_THOROUGH_BUDGET", "ONE_RUN",
           "SOURCES", "default_thorough_budget", "mutation_options", "run_mutation"]

# The one set of defaults of both commands (the catalog's and the operators' engines had each their own):
DEFAULT_BUDGET = defaults.MUTANT_BUDGET
"""Examples per mutant, on every device: 250, the catalog's, not the operators' 100. A killed mutant
stops at its first failure, so the budget costs only the survivors' time, and three bundled mutants
are first caught past example 100 on a CPU (int32_offsets at 152, input_dtype_accumulation at 111,
online_no_rescale at 102): with 100 they would survive the first pass and meet the thorough
re-run's other examples instead."""
GATE_TIMEOUT = defaults.GRADE_TIMEOUT
"""Seconds a job may take until the gate has measured the baseline: 900, the operators' (the
catalog's was 600), which is what ``lse-fuzz grade`` gives a candidate: the gate's runs are graded
like one, and on a cold GPU the gate's run compiles every kernel variant first. The traced
coverage run, when one is made, has this limit too."""
GATE_SHARES = 4
"""At most this many shares of the gate's run on a GPU (one per three jobs): see :func:`gate_shares`."""
ONE_RUN = 1
"""A mutant's examples are one Hypothesis run (GradeOptions.parts) by default, on every device (the
catalog ran four parts on a GPU). Parts of derived seeds run one after the other in a job, each to
its end: a mutant killed in the first part still ran the others and shrank there again; one run
stops at the first failure and shrinks once (on ``reference.lse``, 366 s of worker time in two
parts, 252 s in one). Parts paid off for the gate of a cold GPU, its compiles spread over the
cores; the gate is cached now, so a second run pays nothing for it. ``parts=N`` still splits."""
GPU_THOROUGH_BUDGET = PROFILES["lse-thorough"]
"""Examples of a survivor's re-run with the ``lse-thorough`` profile on a GPU: the profile's own count."""
CPU_THOROUGH_BUDGET = 300
"""The same re-run's examples on the CPU, sized to Triton's interpreter: an example of a survivor of
``reference.lse`` costs 45-60 ms there on a quiet 2-core machine, so 300 take about 15-20 s a
survivor, and every mutant the re-run killed at 500 examples it also kills at 300."""
CACHE = object()  # the default cache directory: <cache>/mutate/verdicts
SOURCES = ("operators", "catalog")
"""Where mutants come from: the operators at every site of TARGET, or the bundled catalog."""


@dataclass
class Run:
    """What every step of one run shares."""

    pool: Pool
    kernel: Kernel
    options: GradeOptions
    thorough: GradeOptions | None  # the survivors' re-run (None: no re-run)
    tests: str | None
    root: Path | None
    store: VerdictCache
    work: Path
    reproducers: Path
    limits: dict[str, float]  # job key -> seconds (the gate's limit for the others)
    progress: Callable[[str, int, int], None] | None
    fuzz_limit: float = GATE_TIMEOUT
    tests_limit: float = GATE_TIMEOUT
    launches: dict[str, list[dict]] | None = None  # the gate's launches by kernel (None: the gate has not decided)
    lines: dict[str, set[int]] | None = None  # the lines the traced run saw (None: not run yet)
    lines_key: str = ""  # that run's key in the verdict cache

    def grade_job(self, key: str, target: str, options: GradeOptions) -> Job:
        return Job(key, GRADE_ENTRY, {"candidate": asdict(Candidate.of_target(target)), "options": options.to_wire(),
                                      "reproducer_dir": str(self.reproducers), "lock_dir": None, "baselines": None})

    def tests_job(self, key: str, files: dict[str, str], mutant: str, timeout: float | None) -> Job:
        return Job(key, TESTS_ENTRY, {"command": self.tests, "root": str(self.root), "files": files,
                                      "env": dict(os.environ), "mutant": mutant, "timeout": timeout})

    def record(self, result, options: GradeOptions) -> GradeRecord:
        return job_record(result, Candidate(**result.job.payload["candidate"]), options)

    def tick(self, step: str, done: int, total: int) -> None:
        if self.progress:
            self.progress(step, done, total)


TESTS_ENTRY = "fuzz.mutation.tests_job:run_tests_job"


def mutation_options(**fields: object) -> GradeOptions:
    """The options a mutant is judged under: ``fields`` of :class:`GradeOptions` (the declared
    contract, call convention, ``--backward``, budget, seed, device, ...), with the mutation
    defaults where not given (:data:`DEFAULT_BUDGET` examples, a failure shrunk for
    ``defaults.MUTANT_SHRINK_SECONDS``)."""
    return GradeOptions.of(**{"budget": DEFAULT_BUDGET, "shrink_seconds": defaults.MUTANT_SHRINK_SECONDS, **fields})


def run_mutation(
    target: str | None = None, *, options: GradeOptions | None = None, source: str = "operators",
    mutants: Iterable[str | Mutant] | None = None, operators: Iterable[str] | None = None, jobs: int | None = None,
    timeout_factor: float = defaults.MUTANT_TIMEOUT_FACTOR, timeout_floor: float = defaults.MUTANT_TIMEOUT_FLOOR,
    thorough_budget: int | None = None, matrix: bool = False, tests: str | None = None,
    tests_root: Path | str | None = None, cache: Path | str | None | object = CACHE, out_dir: Path | str | None = None,
    exit_rule: ExitRule | str = ExitRule.FAIL_UNDER, fail_under: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> MutationReport:
    """Mutate ``target``'s kernels (``source="catalog"``: the bundled mutants of reference:lse) and
    judge every mutant; see the module docstring.

    ``options``: what decides a mutant's verdict (:func:`mutation_options`; the default:
    ``mutation_options()``): the contract and call convention the kernel declares, ``backward``,
    the budget, seed, device, checks (``matrix``: the checks run alone), parts (default one run).
    ``mutants``: names to run (default all), or :class:`Mutant` objects. ``operators``: names in
    :data:`fuzz.mutation.OPERATORS` (default all). ``thorough_budget``: examples of the survivors'
    second run (0: none; None: :func:`default_thorough_budget`). ``tests``:
    a shell command (exit 0 = tests pass) run in an overlay of ``tests_root`` (default: the working
    directory). ``cache``: a directory, None for none. ``out_dir``: the reproducers go to
    ``out_dir/reproducers`` (None: a temporary directory). ``exit_rule``/``fail_under``: what
    :attr:`MutationReport.exit_code` says. InvalidArgument for bad input; :class:`GateFailure` when
    the gate fails.
    """
    started = time.perf_counter()
    kernel, chosen = _mutants(target, source, mutants, operators)
    jobs = (os.cpu_count() or 1) if jobs is None else validate.integer(jobs, name="jobs", low=1)
    timeout_factor = validate.number(timeout_factor, name="timeout_factor", low=0)
    timeout_floor = validate.number(timeout_floor, name="timeout_floor", low=1)
    exit_rule = ExitRule(exit_rule)
    if fail_under is not None:
        validate.number(fail_under, name="fail_under", low=0)
    if options is None:
        options = mutation_options()
    elif not isinstance(options, GradeOptions):
        raise InvalidArgument(f"options={options!r}; expected GradeOptions, e.g. mutation_options(budget=100).")
    # Every mutant meets the same examples (no shape fitting); one run unless parts are asked for.
    options = replace(options, jobs=jobs, fit_shapes=False,
                      parts=ONE_RUN if options.parts is None else options.parts).validated()
    selected = options.checks
    thorough, thorough_budget, scaled = _thorough(options, thorough_budget)
    root = _tests_root(tests, tests_root, kernel)
    store = VerdictCache(cache_dir() / "mutate" / "verdicts" if cache is CACHE else cache)
    work = Path(tempfile.mkdtemp(prefix="lse-fuzz-mutate-"))
    reproducers = (Path(out_dir).resolve() if out_dir is not None else work) / "reproducers"
    limits: dict[str, float] = {}
    setup_seconds = time.perf_counter() - started
    try:
        with Pool(jobs, work_dir=work / "pool", timeout=lambda job: limits.get(job.key, GATE_TIMEOUT),
                  gpus=spread_over(options.device)) as pool:
            run = Run(pool, kernel, options, None if matrix else thorough, tests, root, store, work, reproducers,
                      limits, progress)
            gate = Gate(run, timeout_factor, timeout_floor)
            reused_before = store.reused
            results, verdicts, thorough_names, retried = _judge_all(run, gate, chosen, selected, matrix)
            reused = store.reused - reused_before
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the reproducers are in out_dir when there is one
    config = _config(kernel, chosen, options, source, jobs, timeout_factor, timeout_floor, thorough_budget, scaled,
                     matrix, tests)
    total = len(chosen) * (len(selected or validate_checks(None)) if matrix else 1) + (len(chosen) if tests else 0)
    return MutationReport(results=results, gate=gate.results, config=config, baseline_seconds=gate.baseline,
                          timeout_seconds=run.fuzz_limit, gate_seconds=gate.seconds,
                          mutation_seconds=time.perf_counter() - gate.started - gate.seconds,
                          setup_seconds=setup_seconds, matrix=matrix, kernel=kernel, tests=verdicts if tests else None, thorough=thorough_names,
                          retried=retried, reused=reused, judged=total - reused, command=kernel.target,
                          exit_rule=exit_rule, fail_under=fail_under)


def _mutants(target, source, mutants, operators) -> tuple[Kernel, list[Mutant]]:
    """The kernel and the mutants to run (validated)."""
    if source not in SOURCES:
        raise InvalidArgument(f"source={source!r}; choose one of {', '.join(SOURCES)}.")
    if source == "catalog" and target not in (None, REFERENCE_TARGET):
        raise InvalidArgument(f"target={target!r}: the catalog's mutants are edits of {REFERENCE_TARGET}; "
                              "give no target, or source='operators' to mutate this one.")
    if target is None and source == "operators":
        raise InvalidArgument("target=None; give the kernel's launcher: path/to/kernel.py:lse (or reference:lse).")
    kernel = discover(target or REFERENCE_TARGET)
    every = catalog(kernel) if source == "catalog" else {m.name: m for m in generate(kernel, operators)}
    if mutants is None:
        return kernel, list(every.values())
    chosen = []
    for item in [mutants] if isinstance(mutants, (str, Mutant)) else mutants:
        if isinstance(item, Mutant):
            chosen.append(item)
        elif isinstance(item, str) and item in every:
            chosen.append(every[item])
        else:
            listing = "lse-fuzz mutants --list" if source == "catalog" else f"lse-fuzz mutate {target} --list"
            raise InvalidArgument(f"mutant {item!r} is not a mutant of {kernel.target}; see {listing}.")
    names = [m.name for m in chosen]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates or not chosen:
        raise InvalidArgument(f"mutants: {', '.join(duplicates)} given twice; each mutant runs once." if duplicates
                              else "mutants=[]; expected at least one mutant name (or None for all).")
    return kernel, chosen


def _thorough(options: GradeOptions, budget: int | None) -> tuple[GradeOptions | None, int, bool]:
    """The survivors' re-run's options (None: no re-run), its budget, and whether the device chose it."""
    scaled = budget is None
    budget = default_thorough_budget(options.device) if scaled else validate.integer(budget, name="thorough_budget",
                                                                                       low=0)
    return (replace(options, budget=budget, profile="lse-thorough") if budget else None), budget, scaled


def default_thorough_budget(device: str) -> int:
    """The survivors' re-run's examples by default on ``device``: :data:`CPU_THOROUGH_BUDGET` in
    Triton's interpreter, :data:`GPU_THOROUGH_BUDGET` (the ``lse-thorough`` profile's) on a GPU."""
    return CPU_THOROUGH_BUDGET if device.startswith("cpu") else GPU_THOROUGH_BUDGET


def thorough_source(scaled: bool, device: str) -> str:
    """Where the survivors' re-run's budget came from, as the reports state it."""
    if not scaled:
        return "given (--thorough-budget)"
    if device.startswith("cpu"):
        return (f"the CPU default, sized to Triton's interpreter; {GPU_THOROUGH_BUDGET} on a GPU, and "
                f"--thorough-budget {GPU_THOROUGH_BUDGET} asks for that here")
    return "the GPU default (the lse-thorough profile's examples)"


def _config(kernel, chosen, options, source, jobs, timeout_factor, timeout_floor, thorough_budget, scaled, matrix,
            tests) -> dict:
    return {"target": kernel.target, "source": source, "budget": options.budget, "seed": options.seed,
            "device": options.device, "contract": options.contract.value,
            "declared_contract": options.declared().describe(), "jobs": jobs, "parts": options.parts,
            "timeout_factor": timeout_factor, "timeout_floor": timeout_floor, "max_elements": options.max_elements,
            "checks": list(options.checks) if options.checks else "all", "matrix": matrix,
            "thorough_budget": 0 if matrix else thorough_budget,
            "thorough_budget_source": "none in a kill matrix" if matrix else thorough_source(scaled, options.device),
            "max_elements_drawn": options.max_elements or default_max_elements(options.device),
            "operators": sorted({m.operator for m in chosen}), "tests": tests,
            "kernels": list(kernel.kernels), "launcher": list(kernel.launcher)} | (
                {"backward": True} if options.backward else {})


def _tests_root(tests: str | None, tests_root, kernel: Kernel) -> Path | None:
    if tests is None:
        return None
    if not isinstance(tests, str) or not tests.strip():
        raise InvalidArgument(f"--tests={tests!r}; expected a shell command whose exit status is 0 when the tests pass.")
    root = Path(tests_root or Path.cwd()).resolve()
    if not root.is_dir():
        raise InvalidArgument(f"--tests-root={str(tests_root)!r} is not a directory.")
    for path in kernel.paths.values():
        try:
            Path(path).resolve().relative_to(root)
        except ValueError:
            raise InvalidArgument(f"--tests-root={str(root)!r} does not contain the kernel file {path}; run from "
                                  "(or pass --tests-root) the project directory that holds both it and the tests.") \
                from None
    return root


class Gate:
    """The gate of one run: its jobs (none when its verdict is cached), the records as they come, and,
    once all are in, the verdict: :class:`GateFailure` or InvalidArgument (failing tests, or a kernel
    the CPU cannot run), else the run's coverage, baselines and time limits are set. Its jobs share
    the pool with the mutants' first pass (:func:`fuzz.mutation.judge.judge`): mutants start on the drivers the gate leaves free."""

    def __init__(self, run: Run, timeout_factor: float, timeout_floor: float) -> None:
        self.run, self.factor, self.floor = run, timeout_factor, timeout_floor
        self.started = time.perf_counter()
        kernel, options = run.kernel, run.options
        self.key = verdict_key("gate", kernel.digest, options.key())
        self.tests_key = verdict_key("tests-gate", kernel.digest, run.tests, str(run.root)) if run.tests else None
        self.kept = run.store.get(self.key)
        if self.kept is not None and not all(Cell.kept(self.kept.get(side), 0.0) for side in ("correct", "broken")):
            self.kept = None  # not grading records of this release: the gate runs again
        self.kept_tests = run.store.get(self.tests_key) if self.tests_key else None
        self.gate_file = run.work / "gate.jsonl"
        run.lines_key = verdict_key("gate-coverage", kernel.digest, options.key())
        lines = run.store.get(run.lines_key)
        run.lines = None if lines is None else {f: set(found) for f, found in lines.items()}
        self.jobs: list[Job] = []
        if self.kept is None:
            shares = gate_shares(options)
            target = gate_target(kernel, self.gate_file)
            self.correct = [f"gate-correct-{k}" for k in range(shares)] if shares > 1 else ["gate-correct"]
            # One share probes memory (on a GPU: two processes under compute-sanitizer); the broken
            # kernel must fail a value check, which no memory phase follows.
            self.jobs += [run.grade_job(key, target, replace(options, share=(k, shares),
                                                             memory=MemoryPhase.OFF if k else options.memory)
                                        if shares > 1 else options)
                          for k, key in enumerate(self.correct)]
            self.jobs += [run.grade_job("gate-broken", broken_target(kernel),
                                        replace(options, memory=MemoryPhase.AFTER_PASS))]
        if run.tests and self.kept_tests is None:
            self.jobs.append(run.tests_job("gate-tests", {}, "", GATE_TIMEOUT))
        self.records: dict[str, GradeRecord | dict] = {}  # a grading record; the tests' gate: its JSON
        self.results: list[GateResult] = []
        self.baseline = self.seconds = 0.0
        if not self.jobs:
            self.finish()

    def take(self, result) -> None:
        key = result.job.key
        self.records[key] = tests_record(result) if key == "gate-tests" else self.run.record(result, self.run.options)
        self.run.tick("gate", len(self.records), len(self.jobs))
        if len(self.records) == len(self.jobs):
            self.finish()

    def finish(self) -> None:
        run, kept = self.run, self.kept
        if kept is None:
            correct = merged([self.records[key] for key in self.correct])
            kept = {"correct": correct.to_json(), "broken": self.records["gate-broken"].to_json(),
                    "launches": read_launches(self.gate_file)}
        gate = [GateResult("the unmutated kernel", run.kernel.target, "pass", Cell.kept(kept["correct"], 0.0)),
                GateResult("the kernel + 1", run.kernel.target, "fail", Cell.kept(kept["broken"], 0.0))]
        for entry in gate:
            entry.cell.wall_seconds = float(entry.cell.record.seconds or 0.0)
        unsupported = next((entry for entry in gate if entry.cell.status is MutantStatus.IGNORED), None)
        if unsupported is not None:  # no gate, hence no score, on this device: the user's to change
            why = unsupported.cell.record.reason.removeprefix("UNSUPPORTED on the CPU: ")
            raise InvalidArgument(f"{run.kernel.target}: its mutants cannot be judged on the CPU: {why}")
        if not all(entry.ok for entry in gate):
            raise GateFailure(gate)
        run.store.put(self.key, kept)
        if run.tests:
            record = self.kept_tests or self.records["gate-tests"]
            verdict = TestsVerdict.of(record)
            if verdict.status is not MutantStatus.SURVIVED:
                what = "timed out" if verdict.exit is None else f"exited with status {verdict.exit}"
                tail = " | ".join(verdict.output.strip().splitlines()[-3:])
                raise InvalidArgument(
                    f"--tests={run.tests!r} {what} on the unmutated kernel (it must pass there: exit status 0), run "
                    f"in {run.root}; fix the command or the tests first. Its last output: {tail or '(none)'}")
            run.store.put(self.tests_key, record)
            run.tests_limit = max(self.factor * verdict.seconds, self.floor)
        self.results, self.baseline = gate, gate[0].cell.wall_seconds
        run.fuzz_limit = max(self.factor * self.baseline, self.floor)
        run.launches = kept.get("launches") or {}
        self.seconds = time.perf_counter() - self.started


def gate_shares(options: GradeOptions) -> int:
    """Jobs the gate's run of the unmutated kernel is split into, each a share of its one stream of
    examples (GradeOptions.share), so the mutants' examples stay the gate's. On a GPU host its cold
    compiles (some 60 specializations) were the analysis's longest job, in one process while the
    mutants' were over: shares spread them over the cores. In Triton's interpreter the cores are
    busy anyway: one job."""
    return max(1, min(GATE_SHARES, options.jobs // 3)) if options.device.startswith("cuda") else 1


def merged(records: list[GradeRecord]) -> GradeRecord:
    """One record of the shares of one run: the first that did not pass, else the first with the
    examples and seconds of all (the seconds of one run: the mutants' time limit scales with them)."""
    failed = next((record for record in records if record.verdict is not Verdict.PASS), None)
    if failed is not None or len(records) == 1:
        return failed or records[0]
    return replace(records[0], examples=sum(r.examples or 0 for r in records),
                   seconds=sum(r.seconds or 0.0 for r in records))


def _judge_all(run: Run, gate: Gate, chosen: list[Mutant], selected, matrix: bool):
    """(results, tests verdicts, thoroughly re-run names, retried names) of every mutant; in a
    matrix, one pass per check, each check alone (the gate's jobs beside the first)."""
    if not matrix:
        cells, verdicts, thorough, retried = judge(run, chosen, run.options, gate=gate)
        return [MutantResult.of(m, [cells[m.name]], False) for m in chosen], verdicts, thorough, retried
    by_check: dict[str, dict[str, Cell]] = {}
    verdicts: dict[str, TestsVerdict] = {}
    retried: set[str] = set()
    for i, check in enumerate(selected or validate_checks(None)):
        cells, found, _, again = judge(run, chosen, replace(run.options, checks=(check,)), gate=gate,
                                       with_tests=i == 0, step=f"mutants: {check}")
        by_check[check] = {name: replace(cell, checks=(check,)) for name, cell in cells.items()}
        verdicts.update(found)
        retried |= again
    results = [MutantResult.of(m, [cells[m.name] for cells in by_check.values()], True) for m in chosen]
    return results, verdicts, set(), retried
