"""``lse-fuzz mutate``: mutation analysis of any Triton LSE kernel, and of the tests that guard it.

    from fuzz.mutate import run_mutate
    report = run_mutate("path/to/kernel.py:lse", budget=100, tests="pytest -q tests/test_kernel.py")
    report.score, report.reused          # Stryker's score; verdicts taken from the cache

Steps:

1. Discovery (:mod:`.sites`): the kernels the launcher reaches, and every operator site in them.
2. The gate, on the one worker pool: the unmutated kernel must pass the fuzzer (run with its lines
   traced: that run is the coverage), and the kernel plus one must fail it; with ``tests``, the
   user's command must pass on the unmutated kernel. Otherwise nothing can be scored.
3. Each mutant whose site never ran is NoCoverage (not run). The others are graded exactly like a
   candidate of ``lse-fuzz grade`` (isolated worker, the fuzzer in a driver), stopped after
   ``max(timeout_factor * baseline, timeout_floor)`` seconds; with ``tests``, the command runs
   against each mutant too (exit status 0: it survived the tests).
4. Survivors are graded again with the ``lse-thorough`` profile and ``thorough_budget`` examples
   (by default sized to the device: :func:`default_thorough_budget`); those that still survive are
   listed with their diff: a real gap, or an equivalent mutant.
5. Every verdict is cached (:mod:`.cache`); a re-run judges only the mutants whose inputs changed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from mutants._patch import cache_dir
from reference.errors import InvalidArgument

from .. import defaults, validate
from ..grading.evaluate import GRADE_ENTRY, job_record
from ..grading.candidates import Candidate
from ..grading.options import GradeOptions
from ..isolation import Job, Pool, spread_over
from ..mutation.results import Cell, GateFailure, GateResult, MutantResult, MutationReport
from ..outcomes import MutantStatus
from ..profiles import PROFILES
from ..strategies import default_max_elements
from .cache import VerdictCache, verdict_key
from .loading import broken_target, coverage_target, mutant_target, read_coverage, read_launches
from .sites import Kernel, Mutant, discover, generate

__all__ = ["CPU_THOROUGH_BUDGET", "DEFAULT_BUDGET", "GPU_THOROUGH_BUDGET", "MutateReport", "TestsVerdict",
           "default_thorough_budget", "run_mutate"]

DEFAULT_BUDGET = 100
"""Examples per mutant, on every device (a killed mutant stops at its first failure)."""
GPU_THOROUGH_BUDGET = PROFILES["lse-thorough"]
"""Examples of a survivor's re-run with the ``lse-thorough`` profile on a GPU: the profile's own count."""
CPU_THOROUGH_BUDGET = 300
"""The same re-run's examples on the CPU, sized to Triton's interpreter: an example of a survivor of
``reference.lse`` costs 45-60 ms there on a quiet 2-core machine (2000 examples took 91 s for one
survivor), so 300 take about 15-20 s a survivor. The re-run is most of a default run's time
(``reference.lse``: 8 survivors of 47 mutants; at 500 examples the re-run took 79% of the worker
time), and 300 keep that run within 5 minutes on two cores with a margin; every mutant the re-run
killed at 500 examples it also kills at 300. ``thorough_budget=2000`` (``--thorough-budget 2000``)
asks for the GPU-sized re-run anywhere."""
ONE_RUN = 1
"""A mutant's examples are one Hypothesis run (GradeOptions.parts), on every device. The CPU's
default split of a check into two runs of derived seeds (:mod:`fuzz.grading.parts`) puts one
check on two cores; here the pool already runs a mutant per core, and a grading driver runs the
parts one after the other, each to its end: a mutant killed in the first part still ran the second,
and shrank its failure there again. One run stops at the first failure, shrinks once, and draws
the same number of examples (on ``reference.lse`` the mutants that did not survive the first pass
took 366 s of worker time in two parts, 252 s in one run, at the same load; and two mutants of the
``INT64`` path that only the survivors' re-run had killed fell in the first pass)."""
RETRY_FACTOR = 4.0
"""A mutant that timed out is run once more, with this many times its limit, before Timeout is its
verdict. Stryker counts a Timeout as detected (an endless loop is a bug), so a timeout that only
load caused is a kill the mutant never earned: on a GPU every mutant compiles its kernels anew, and
with one run per core the compiles of its neighbours slow its own (on two H200s, two mutants of
``two_pass.py`` the CPU had run to the end, one of them equivalent, timed out at three times the
gate's run). The second run starts in the pool's second phase, beside the survivors' re-runs only."""
TESTS_ENTRY = "fuzz.mutate.tests_job:run_tests_job"
GATE_TIMEOUT = 900.0
CACHE = object()  # the default cache directory: <cache>/mutate/verdicts


@dataclass
class TestsVerdict:
    """What the user's test command did with one mutant."""

    status: MutantStatus  # Killed (non-zero exit), Survived (exit 0) or Timeout
    exit: int | None
    seconds: float
    output: str

    @classmethod
    def of(cls, record: dict) -> TestsVerdict:
        if record.get("timed_out"):
            status = MutantStatus.TIMEOUT
        else:
            status = MutantStatus.SURVIVED if record.get("exit") == 0 else MutantStatus.KILLED
        return cls(status, record.get("exit"), float(record.get("seconds") or 0.0), record.get("output") or "")


@dataclass
class MutateReport(MutationReport):
    """A mutation analysis of one kernel: the bundled report's fields plus what ``mutate`` adds."""

    kernel: Kernel | None = None
    tests: dict[str, TestsVerdict] | None = None  # mutant name -> the user's tests' verdict
    thorough: set[str] = field(default_factory=set)  # mutants graded again with lse-thorough
    retried: set[str] = field(default_factory=set)  # mutants run again after a timeout (RETRY_FACTOR)
    reused: int = 0  # verdicts taken from the cache
    judged: int = 0  # verdicts decided in this run
    command: str = ""

    @property
    def survivors(self) -> list[MutantResult]:
        return [r for r in self.results if r.status is MutantStatus.SURVIVED]

    def tests_killed(self) -> int:
        return sum(v.status.detected for v in (self.tests or {}).values())


@dataclass
class Coverage:
    """What the gate's run of the unmutated kernel reached: the lines that ran, per file, and the
    constexpr values of each kernel's launches (see :func:`_covered`)."""

    lines: dict[str, set[int]]
    launches: dict[str, list[dict]]


LINE_NOT_RUN = "the mutated line never ran on any generated input (coverage of the unmutated kernel's gate run)"


def _no_coverage_cell(mutant: Mutant, device: str) -> Cell:
    reason = LINE_NOT_RUN
    if mutant.kernel and not device.startswith("cpu"):
        wanted = " and ".join(f"{name}={want}" for name, want in mutant.guards)
        reason = (f"its static branch never ran: no launch of {mutant.function} in the unmutated kernel's gate "
                  f"run had {wanted} (compiled kernels have no line coverage; their constexprs say this)")
    record = {"verdict": "pass", "examples": 0, "check": None, "reason": reason, "details": "",
              "counterexample": None, "reproducer": None, "replay": None}
    return Cell((), record, 0.0)


def _covered(mutant: Mutant, kernel: Kernel, coverage: dict[str, set[int]], device: str,
             launches: dict[str, list[dict]] | None = None) -> bool:
    if mutant.kernel and not device.startswith("cpu"):
        # A compiled kernel runs no Python lines; but a site in a static branch (`if PARTIALS:`) of a
        # launched kernel ran only if some launch of the gate's run gave that constexpr the value.
        runs = (launches or {}).get(mutant.function)
        if not mutant.guards or not runs:
            return True  # unknown (a helper function, or no launch recorded): run it
        return any(all(bool(run.get(name)) == want for name, want in mutant.guards) for run in runs)
    lines = coverage.get(os.path.realpath(kernel.paths[mutant.file]), set())
    first, last = mutant.statement
    return any(line in lines for line in range(first, last + 1))


def run_mutate(
    target: str,
    *,
    operators: Iterable[str] | None = None,
    budget: int = DEFAULT_BUDGET,
    seed: int = 0,
    device: str | None = None,
    contract: str = "strict",
    dtypes: Iterable[str] | None = None,
    layouts: str = "any",
    output_dtype: str = "either",
    max_n: int | None = None,
    checks: Iterable[str] | None = None,
    max_elements: int | None = None,
    jobs: int | None = None,
    timeout_factor: float = defaults.MUTANT_TIMEOUT_FACTOR,
    timeout_floor: float = defaults.MUTANT_TIMEOUT_FLOOR,
    thorough_budget: int | None = None,
    tests: str | None = None,
    tests_root: Path | str | None = None,
    cache: Path | str | None | object = CACHE,
    only: Iterable[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> MutateReport:
    """Mutate ``target``'s kernels and judge every mutant; see the module docstring.

    ``operators``: names in :data:`fuzz.mutate.OPERATORS` (default all). ``only``: mutant names
    to run (default all). ``thorough_budget``: examples of the survivors' second run (0: none; None:
    :func:`default_thorough_budget` for the device, 300 on the CPU and 2000 on a GPU).
    ``tests``: a shell command (exit 0 = tests pass) run in an overlay of ``tests_root`` (default:
    the working directory). ``cache``: a directory, None for no cache. InvalidArgument for bad input.
    """
    started = time.perf_counter()
    kernel = discover(target)
    mutants = generate(kernel, operators)
    if only is not None:
        wanted = set(only)
        unknown = sorted(wanted - {m.name for m in mutants})
        if unknown:
            raise InvalidArgument(f"mutant {unknown[0]!r} is not a mutant of {target}; see lse-fuzz mutate --list.")
        mutants = [m for m in mutants if m.name in wanted]
    jobs = (os.cpu_count() or 1) if jobs is None else validate.integer(jobs, name="jobs", low=1)
    timeout_factor = validate.number(timeout_factor, name="timeout_factor", low=0)
    timeout_floor = validate.number(timeout_floor, name="timeout_floor", low=1)
    options = GradeOptions(budget=budget, seed=seed, contract=contract, dtypes=None if dtypes is None else tuple(dtypes),
                           layouts=layouts, output_dtype=output_dtype, max_n=max_n,
                           checks=None if checks is None else tuple(checks), device=device, max_elements=max_elements,
                           jobs=jobs, fit_shapes=False, parts=ONE_RUN).validated()
    scaled = thorough_budget is None
    thorough_budget = (default_thorough_budget(options.device) if scaled
                       else validate.integer(thorough_budget, name="thorough_budget", low=0))
    thorough = replace(options, budget=thorough_budget or 1, profile="lse-thorough")
    root = _tests_root(tests, tests_root, kernel)
    store = VerdictCache(cache_dir() / "mutate" / "verdicts" if cache is CACHE else cache)
    env = dict(os.environ)
    work = Path(tempfile.mkdtemp(prefix="lse-fuzz-mutate-"))
    limits: dict[str, float] = {}  # job key -> seconds; the gate's generous limit until it measured a baseline
    setup_seconds = time.perf_counter() - started
    try:
        with Pool(jobs, work_dir=work / "pool", timeout=lambda job: limits.get(job.key, GATE_TIMEOUT),
                  gpus=spread_over(options.device)) as pool:
            gate, coverage, baseline, tests_baseline, gate_seconds = _gate(
                pool, kernel, options, tests, root, env, store, work, progress)
            fuzz_limit = max(timeout_factor * baseline, timeout_floor)
            tests_limit = max(timeout_factor * tests_baseline, timeout_floor)
            mutation_started = time.perf_counter()
            reused_before = store.reused
            cells, test_verdicts, thorough_names, retried = _judge(
                pool, kernel, mutants, options, thorough if thorough_budget else None, coverage, tests, root, env,
                store, work, (fuzz_limit, tests_limit, limits), progress)
            reused = store.reused - reused_before
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = []
    for mutant in mutants:
        cell, status = cells[mutant.name]
        results.append(MutantResult(mutant, status, _reason(cell, status), cell))
    config = {"target": kernel.target, "budget": budget, "seed": seed, "device": options.device,
              "contract": options.contract, "declared_contract": options.declared().describe(), "jobs": jobs, "timeout_factor": timeout_factor,
              "timeout_floor": timeout_floor, "max_elements": max_elements,
              "checks": list(options.checks) if options.checks else "all", "thorough_budget": thorough_budget,
              "thorough_budget_source": _thorough_source(scaled, options.device),
              "max_elements_drawn": max_elements or default_max_elements(options.device),
              "operators": sorted({m.operator for m in mutants}), "tests": tests,
              "kernels": list(kernel.kernels), "launcher": list(kernel.launcher)}
    total = len(mutants) + (len(mutants) if tests else 0)
    return MutateReport(results=results, gate=gate, config=config, baseline_seconds=baseline,
                        timeout_seconds=fuzz_limit, gate_seconds=gate_seconds,
                        mutation_seconds=time.perf_counter() - mutation_started, setup_seconds=setup_seconds,
                        kernel=kernel, tests=test_verdicts if tests else None, thorough=thorough_names, retried=retried,
                        reused=reused, judged=total - reused, command=target)


def default_thorough_budget(device: str) -> int:
    """The survivors' re-run's examples by default on ``device``: :data:`CPU_THOROUGH_BUDGET` in
    Triton's interpreter, :data:`GPU_THOROUGH_BUDGET` (the ``lse-thorough`` profile's) on a GPU."""
    return CPU_THOROUGH_BUDGET if device.startswith("cpu") else GPU_THOROUGH_BUDGET


def _thorough_source(scaled: bool, device: str) -> str:
    """Where the survivors' re-run's budget came from, as the reports state it."""
    if not scaled:
        return "given (--thorough-budget)"
    if device.startswith("cpu"):
        return (f"the CPU default, sized to Triton's interpreter; {GPU_THOROUGH_BUDGET} on a GPU, and "
                f"--thorough-budget {GPU_THOROUGH_BUDGET} asks for that here")
    return "the GPU default (the lse-thorough profile's examples)"


def _reason(cell: Cell, status: MutantStatus) -> str:
    if status is MutantStatus.NO_COVERAGE:
        return cell.record.get("reason") or LINE_NOT_RUN
    return cell.reason


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


def _grade_job(key: str, target: str, options: GradeOptions, work: Path) -> Job:
    candidate = Candidate.of_target(target)
    return Job(key, GRADE_ENTRY, {"candidate": asdict(candidate), "options": options.to_wire(),
                                  "reproducer_dir": str(work / "reproducers"), "lock_dir": None, "baselines": None})


def _tests_job(key: str, tests: str, root: Path, files: dict[str, str], env: dict, mutant: str,
               timeout: float | None) -> Job:
    return Job(key, TESTS_ENTRY, {"command": tests, "root": str(root), "files": files, "env": env,
                                  "mutant": mutant, "timeout": timeout})


def _record(result, options: GradeOptions) -> dict:
    return job_record(result, Candidate(**result.job.payload["candidate"]), options)


def _tests_record(result) -> dict:
    if result.record is not None:
        return result.record
    return {"exit": None, "timed_out": True, "seconds": round(result.seconds, 3), "output": result.detail}


def _gate(pool, kernel, options, tests, root, env, store, work, progress):
    """Gate results, coverage, fuzz and tests baselines (seconds), and the gate's duration."""
    started = time.perf_counter()
    key = verdict_key("gate", kernel.digest, options.key())
    tests_key = verdict_key("tests-gate", kernel.digest, tests, str(root)) if tests else None
    kept = store.get(key)
    kept_tests = store.get(tests_key) if tests_key else None
    coverage_file = work / "coverage.jsonl"
    jobs = []
    if kept is None:
        jobs += [_grade_job("gate-correct", coverage_target(kernel, coverage_file), options, work),
                 _grade_job("gate-broken", broken_target(kernel), options, work)]
    if tests and kept_tests is None:
        jobs.append(_tests_job("gate-tests", tests, root, {}, env, "", GATE_TIMEOUT))
    records: dict[str, dict] = {}
    for i, result in enumerate(pool.run(jobs)):
        records[result.job.key] = (_tests_record(result) if result.job.key == "gate-tests"
                                   else _record(result, options))
        if progress:
            progress("gate", i + 1, len(jobs))
    if kept is None:
        covered = read_coverage(coverage_file)
        kept = {"correct": records["gate-correct"], "broken": records["gate-broken"],
                "coverage": {f: sorted(lines) for f, lines in covered.items()},
                "launches": read_launches(coverage_file)}
    gate = [GateResult("the unmutated kernel", kernel.target, "pass", Cell((), kept["correct"], 0.0)),
            GateResult("the kernel + 1", kernel.target, "fail", Cell((), kept["broken"], 0.0))]
    for entry in gate:
        entry.cell.wall_seconds = float(entry.cell.record.get("seconds") or 0.0)
    if not all(entry.ok for entry in gate):
        raise GateFailure(gate)
    store.put(key, kept)
    tests_baseline = 0.0
    if tests:
        record = kept_tests or records["gate-tests"]
        verdict = TestsVerdict.of(record)
        if verdict.status is not MutantStatus.SURVIVED:
            what = "timed out" if verdict.exit is None else f"exited with status {verdict.exit}"
            tail = " | ".join(verdict.output.strip().splitlines()[-3:])
            raise InvalidArgument(
                f"--tests={tests!r} {what} on the unmutated kernel (it must pass there: exit status 0), run in "
                f"{root}; fix the command or the tests first. Its last output: {tail or '(none)'}")
        store.put(tests_key, record)
        tests_baseline = verdict.seconds
    coverage = {f: set(lines) for f, lines in kept["coverage"].items()}
    coverage_of = Coverage(coverage, kept.get("launches") or {})
    baseline = gate[0].cell.wall_seconds
    return gate, coverage_of, baseline, tests_baseline, time.perf_counter() - started


def _judge(pool, kernel, mutants, options, thorough, coverage, tests, root, env, store, work, timeouts, progress):
    """(name -> (cell, status)), (name -> TestsVerdict), the names graded again thoroughly, and
    those run again after a timeout."""
    fuzz_limit, tests_limit, limits = timeouts
    cells: dict[str, tuple[Cell, MutantStatus]] = {}
    test_verdicts: dict[str, TestsVerdict] = {}
    thorough_names: set[str] = set()
    retried: set[str] = set()
    thorough_key = None if thorough is None else thorough.key()
    keys = {m.name: verdict_key("fuzz", m.key, kernel.digest, options.key(), thorough_key) for m in mutants}
    # A survivor's or a timed-out mutant's first pass, kept apart from its verdict (the second run
    # decides that): a run stopped in its second phase (Ctrl-C, a lease that ends) starts there again.
    first_keys = {m.name: verdict_key("first-pass", m.key, kernel.digest, options.key()) for m in mutants}
    tests_keys = {m.name: verdict_key("tests", m.key, kernel.digest, tests, str(root)) for m in mutants} if tests else {}
    by_name = {m.name: m for m in mutants}
    jobs: list[Job] = []
    survivors: list[str] = []
    timed_out: list[str] = []
    for mutant in mutants:
        kept = store.get(keys[mutant.name])
        first = None if kept is not None else store.get(first_keys[mutant.name], reuse=False)
        if kept is not None:
            cells[mutant.name] = (Cell((), kept["record"], kept["wall"]), MutantStatus(kept["status"]))
            if kept.get("thorough"):
                thorough_names.add(mutant.name)
            if kept.get("retried"):
                retried.add(mutant.name)
        elif first is not None and first.get("status") == MutantStatus.TIMEOUT.value:
            timed_out.append(mutant.name)  # timed out in an earlier run's first pass: its second run is left
        elif first is not None and thorough is not None:
            survivors.append(mutant.name)  # survived its first pass in an earlier run: the re-run is left
        elif not _covered(mutant, kernel, coverage.lines, options.device, coverage.launches):
            cells[mutant.name] = (_no_coverage_cell(mutant, options.device), MutantStatus.NO_COVERAGE)
            store.put(keys[mutant.name], {"record": cells[mutant.name][0].record, "wall": 0.0,
                                          "status": MutantStatus.NO_COVERAGE.value})
        else:
            jobs.append(_grade_job(f"fuzz:{mutant.name}", mutant_target(kernel, mutant), options, work))
            limits[jobs[-1].key] = fuzz_limit
        if tests:
            kept_tests = store.get(tests_keys[mutant.name])
            if kept_tests is not None:
                test_verdicts[mutant.name] = TestsVerdict.of(kept_tests)
            else:
                files = {str(Path(kernel.paths[mutant.file]).resolve().relative_to(root)):
                         mutant.mutated_sources()[mutant.file]}
                jobs.append(_tests_job(f"tests:{mutant.name}", tests, root, files, env, mutant.name, None))
                limits[jobs[-1].key] = tests_limit
    for done, result in enumerate(pool.run(jobs), 1):
        kind, _, name = result.job.key.partition(":")
        if kind == "tests":
            record = _tests_record(result)
            test_verdicts[name] = TestsVerdict.of(record)
            store.put(tests_keys[name], record)
        else:
            cell = Cell((), _record(result, options), result.seconds)
            cells[name] = (cell, cell.status)
            if cell.status is MutantStatus.TIMEOUT or (cell.status is MutantStatus.SURVIVED and thorough is not None):
                (timed_out if cell.status is MutantStatus.TIMEOUT else survivors).append(name)
                store.put(first_keys[name], {"record": cell.record, "wall": cell.wall_seconds,
                                             "status": cell.status.value})
            else:
                store.put(keys[name], {"record": cell.record, "wall": cell.wall_seconds, "status": cell.status.value})
        if progress:
            progress("mutants", done, len(jobs))
    # The second phase, in rounds: a run that timed out is run once more with RETRY_FACTOR times its
    # limit (a first pass or a survivor's re-run alike); a survivor is re-run thoroughly, with the
    # patience its first pass needed. A verdict is kept when neither applies.
    scale = max(1.0, thorough.budget / max(1, options.budget)) if thorough is not None else 1.0
    pending = [(name, False, RETRY_FACTOR) for name in timed_out] + [(name, True, 1.0) for name in survivors]
    rounds = 0
    while pending:
        rounds += 1
        patience_of = {(name, deep): patience for name, deep, patience in pending}
        again = [_grade_job(f"{'thorough' if deep else 'retry'}:{name}", mutant_target(kernel, by_name[name]),
                            thorough if deep else options, work) for name, deep, _ in pending]
        limits.update({job.key: fuzz_limit * patience * (scale if deep else 1.0)
                       for job, (_, deep, patience) in zip(again, pending)})
        pending = []
        for done, result in enumerate(pool.run(again), 1):
            kind, _, name = result.job.key.partition(":")
            deep = kind == "thorough"
            patience = patience_of[(name, deep)]
            cell = Cell((), _record(result, thorough if deep else options), result.seconds)
            cells[name] = (cell, cell.status)
            if progress:
                progress("again" if rounds == 1 else f"again {rounds}", done, len(again))
            if patience > 1.0 or cell.status is MutantStatus.TIMEOUT:
                retried.add(name)
            if cell.status is MutantStatus.TIMEOUT and patience < RETRY_FACTOR:
                pending.append((name, deep, RETRY_FACTOR))
            elif not deep and cell.status is MutantStatus.SURVIVED and thorough is not None:
                pending.append((name, True, patience))
            else:
                if deep:
                    thorough_names.add(name)
                store.put(keys[name], {"record": cell.record, "wall": cell.wall_seconds,
                                       "status": cell.status.value, "thorough": deep, "retried": name in retried})
    return cells, test_verdicts, thorough_names, retried
