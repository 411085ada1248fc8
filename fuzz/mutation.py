"""Mutation analysis: does the fuzz suite catch each planted bug?  (``lse-fuzz mutants``)

    from fuzz.mutation import run_mutation_analysis
    report = run_mutation_analysis(seed=0)                   # every mutant in mutants.MUTANTS
    print(report.score, report.exit_code)                    # 100.0, 0 when every mutant is killed
    report.write("lse-fuzz-report")                          # mutation.json (Stryker), mutation.md

Steps:

1. The gate. The suite runs against the correct kernel (``reference.lse``, and the same kernel
   through the mutants' launcher, ``mutants._launch.unmutated_lse``): both must pass. It runs
   against a deliberately broken double (``fuzz.mutation_gate:lse_plus_one``): it must be caught.
   Otherwise the suite cannot tell right from wrong and no mutant is scored (:class:`GateFailure`).
   The gate uses the mutants' budget, seed and checks: Hypothesis then draws the same examples
   for a mutant as for the correct kernel up to the mutant's first failure, so every example a
   mutant failed on (before shrinking) is one the unmutated kernel passed.
2. Each mutant runs in its own worker process (``python -m fuzz.mutation_worker``), which runs
   ``fuzz.check`` on it and then the huge-offset probe (:data:`HUGE_OFFSET_PROBES`), and writes
   one JSON line per result. A worker that runs past ``max(timeout_factor * baseline_seconds,
   timeout_floor)`` (baseline: the slowest correct run of the gate) is killed. Mutants start on
   the workers the gate leaves free, before the gate ends, but none is scored unless it passes.
3. :func:`classify`, the one mapping from a raw outcome (the worker's result, its exit code or
   signal, a timeout) to a :class:`MutantStatus`.
4. The report: a terminal table, a JSON report in the mutation-testing-report schema of Stryker
   (version 3.8.4 of the npm package ``mutation-testing-report-schema``), and a Markdown summary.

Score (Stryker's definition): detected / valid, in percent, where detected = Killed + Timeout and
valid = every mutant except CompileError and RuntimeError (those never ran to a verdict).

Exit code of ``lse-fuzz mutants``: 0 when every mutant is Killed; 1 when any is not (Survived,
Timeout, RuntimeError or CompileError: each planted bug should be caught by a check, so even a
timeout, which counts as detected in the score, is a failure of this suite); 2 when the gate
fails or the arguments are invalid.

Kill matrix (``matrix=True``): every mutant against each check alone (``fuzz.check`` with
``checks=[that check]``), so the report shows which checks carry weight and which mutants only
one check catches.

Huge offsets: the int32-offset mutant only shows on inputs whose elements lie 2**31 or more
elements from the base pointer. The fuzzer's default examples are far smaller, and a wrapped
offset that points before the allocation crashes the process instead of failing a check. The
probe therefore builds float16 views of 3 and 4 rows at a row stride below 2**31 (a stride of
2**31 or more is passed to the kernel as an int64 and hides the bug) whose first element lies
2**31 elements into a lazily allocated storage: a wrapped row offset then lands inside the
allocation (untouched pages read as zeros) and the agreement check fails.
"""

from __future__ import annotations

import enum
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from reference.errors import InvalidArgument

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_OUT_DIR",
    "DEFAULT_TIMEOUT_FACTOR",
    "DEFAULT_TIMEOUT_FLOOR",
    "GATE_BROKEN",
    "GATE_CORRECT",
    "HUGE_OFFSET_PROBES",
    "GateFailure",
    "GateResult",
    "HugeOffsetProbe",
    "MutantResult",
    "MutantStatus",
    "MutationReport",
    "RawOutcome",
    "classify",
    "run_mutation_analysis",
]

DEFAULT_BUDGET = 250
"""Examples per mutant (``fuzz.check``'s budget). Killed mutants stop at their first failure."""

DEFAULT_TIMEOUT_FACTOR = 3.0
DEFAULT_TIMEOUT_FLOOR = 30.0
DEFAULT_OUT_DIR = Path("lse-fuzz-report")

GATE_CORRECT: tuple[tuple[str, str], ...] = (
    ("reference.lse", "reference:lse"),
    ("reference kernel, mutants' launcher", "mutants._launch:unmutated_lse"),
)
"""(label, target) of the correct implementations the suite must pass."""

GATE_BROKEN: tuple[tuple[str, str], ...] = (
    ("reference.lse + 1", "fuzz.mutation_gate:lse_plus_one"),
)
"""(label, target) of the deliberately broken implementations the suite must catch."""

ALL_CHECKS = "all"


# --------------------------------------------------------------------------------------------
# Statuses and the one mapping from raw outcomes to them


class MutantStatus(str, enum.Enum):
    """What became of a mutant; the values are the Stryker report's status names."""

    KILLED = "Killed"  # a check failed on it
    SURVIVED = "Survived"  # every example passed every check
    TIMEOUT = "Timeout"  # the worker ran past its time limit and was killed
    RUNTIME_ERROR = "RuntimeError"  # it crashed: signal, CUDA error, an exception from the kernel or launcher
    COMPILE_ERROR = "CompileError"  # the kernel does not compile (Triton CompilationError, or the interpreter's)

    @property
    def detected(self) -> bool:
        return self in (MutantStatus.KILLED, MutantStatus.TIMEOUT)

    @property
    def valid(self) -> bool:
        """Counted in the score: the mutant ran to a verdict."""
        return self not in (MutantStatus.RUNTIME_ERROR, MutantStatus.COMPILE_ERROR)


@dataclass(frozen=True)
class RawOutcome:
    """How one worker run (one cell: a mutant against a set of checks) ended, before judging it.

    ``result`` is the worker's JSON record for the cell, None when it wrote none (it died or was
    killed first). ``returncode`` is the worker's exit code, negative for the signal that killed
    it, None when it was still running when the record arrived or when it was killed on timeout.
    """

    result: dict | None = None
    returncode: int | None = None
    timed_out: bool = False
    timeout: float | None = None
    stderr: str = ""


_COMPILE_ERROR_TYPES = (
    "triton.compiler.errors.CompilationError",  # compiled mode: the kernel failed to compile
    "builtins.SyntaxError",  # the kernel's file does not even parse
)
_INTERPRETER_ERROR = "triton.runtime.errors.InterpreterError"
_PASS_MANAGER_FAILED = "PassManager::run failed"
_DEVICE_ASSERT = "builtins.AssertionError"


def _is_compile_error(chain: Sequence[dict]) -> bool:
    """Whether an exception chain (outermost first, each with the qualified names of its MRO)
    is a compilation error.

    In Triton's interpreter nothing is compiled: a kernel body is executed as Python, and an
    exception raised inside it arrives as an InterpreterError. Those are the errors the compiler
    reports at compile time (an undefined ``tl`` function, a shape or dtype mismatch), with one
    exception: a failed ``tl.device_assert``, an AssertionError, is a runtime error on a GPU too.
    """
    names = [set(entry.get("mro", [])) | {entry.get("type", "")} for entry in chain]
    if any(name in types for types in names for name in _COMPILE_ERROR_TYPES):
        return True
    # A crash inside Triton's MLIR pipeline (a compiler bug the kernel tripped, seen on Triton 3.6)
    # surfaces as a plain RuntimeError: it is still the kernel failing to compile.
    if any(_PASS_MANAGER_FAILED in str(entry.get("message", "")) for entry in chain):
        return True
    interpreted = any(_INTERPRETER_ERROR in types for types in names)
    return interpreted and not any(_DEVICE_ASSERT in types for types in names)


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def classify(raw: RawOutcome) -> tuple[MutantStatus, str]:
    """The one mapping from a raw outcome to (status, reason).

    timeout -> Timeout; no result and a signal -> RuntimeError (crash); no result and an exit
    code -> RuntimeError; result "passed" -> Survived; "failed" (or "flaky": a failure that did not
    reproduce is still a failure) -> Killed; "raised" or "load_failed" -> CompileError when the
    exception is a compilation error (:func:`_is_compile_error`), RuntimeError otherwise.
    """
    tail = _tail(raw.stderr)
    if raw.timed_out:
        limit = f" of {raw.timeout:.0f} s" if raw.timeout is not None else ""
        return MutantStatus.TIMEOUT, f"no result within the time limit{limit}: the worker was killed" + tail
    result = raw.result
    if result is None:
        if raw.returncode is not None and raw.returncode < 0:
            return MutantStatus.RUNTIME_ERROR, f"the worker crashed: killed by {signal_name(raw.returncode)}" + tail
        code = "no exit code" if raw.returncode is None else f"exit code {raw.returncode}"
        return MutantStatus.RUNTIME_ERROR, f"the worker ended ({code}) without a result" + tail
    outcome = result.get("outcome")
    if outcome == "passed":
        return MutantStatus.SURVIVED, f"no check failed in {result.get('examples', 0)} examples"
    if outcome in ("failed", "flaky"):
        return MutantStatus.KILLED, str(result.get("message") or f"check {result.get('check')!r} failed")
    if outcome in ("raised", "load_failed"):
        chain = result.get("exception") or []
        status = MutantStatus.COMPILE_ERROR if _is_compile_error(chain) else MutantStatus.RUNTIME_ERROR
        return status, str(result.get("message") or "the implementation raised")
    raise ValueError(f"unknown worker outcome {outcome!r} in {result!r}")


def _tail(text: str, lines: int = 12) -> str:
    text = (text or "").strip()
    if not text:
        return ""
    return "\n  stderr (last lines):\n" + "\n".join("    " + line for line in text.splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# Huge-offset probe (run by the worker after the fuzzer)


@dataclass(frozen=True)
class HugeOffsetProbe:
    """One deterministic input whose last rows lie past 2**31 elements (see the module docstring)."""

    rows: int
    cols: int
    dtype: str
    recipe: str
    level: int = 0
    pad: int = 0
    seed: int = 0

    OFFSET = 2**31  # storage offset of element [0, 0]: a wrapped row offset (>= -2**31) stays inside


HUGE_OFFSET_PROBES: tuple[HugeOffsetProbe, ...] = (
    HugeOffsetProbe(rows=3, cols=5, dtype="float16", recipe="small", pad=1, seed=0),
    HugeOffsetProbe(rows=4, cols=37, dtype="bfloat16", recipe="ascending", level=1, pad=0, seed=1),
)
"""2-byte dtypes keep the lazily allocated storage at 8 GiB (2**32 elements)."""


# --------------------------------------------------------------------------------------------
# Results


@dataclass
class CellResult:
    """One worker verdict: a target against a set of checks."""

    checks: tuple[str, ...]
    status: MutantStatus
    reason: str
    raw: RawOutcome
    wall_seconds: float

    @property
    def result(self) -> dict:
        return self.raw.result or {}

    @property
    def check(self) -> str | None:
        return self.result.get("check")

    @property
    def examples(self) -> int:
        return int(self.result.get("examples") or 0)

    @property
    def seconds(self) -> float:
        """Seconds the checks ran (the time to kill, for a killed mutant); wall time otherwise."""
        return float(self.result.get("seconds") or self.wall_seconds)

    @property
    def stage(self) -> str | None:
        return self.result.get("stage")

    @property
    def counterexample(self) -> str | None:
        example = self.result.get("counterexample")
        return example.get("description") if isinstance(example, dict) else None

    @property
    def reproducer(self) -> str | None:
        return self.result.get("reproducer")

    @property
    def replay(self) -> str | None:
        return self.result.get("replay")


@dataclass
class GateResult:
    label: str
    target: str
    must: str  # "pass" or "fail"
    cell: CellResult

    @property
    def ok(self) -> bool:
        if self.must == "pass":
            return self.cell.status is MutantStatus.SURVIVED
        return self.cell.status is MutantStatus.KILLED

    def describe(self) -> str:
        verdict = {MutantStatus.SURVIVED: "passed", MutantStatus.KILLED: f"caught by {self.cell.check!r}"}.get(
            self.cell.status, self.cell.status.value)
        return (f"{'ok' if self.ok else 'FAILED'}: {self.label} ({self.target}) must {self.must}: {verdict}, "
                f"{self.cell.examples} examples, {self.cell.wall_seconds:.1f} s")


@dataclass
class MutantResult:
    mutant: object  # mutants.Mutant
    status: MutantStatus
    reason: str
    cell: CellResult
    matrix: dict[str, CellResult] | None = None

    @property
    def name(self) -> str:
        return self.mutant.name

    @property
    def killed_by(self) -> list[str]:
        """The check that killed it; in a matrix run, every check that did."""
        if self.matrix is not None:
            return [check for check, cell in self.matrix.items() if cell.status is MutantStatus.KILLED]
        return [self.cell.check] if self.status is MutantStatus.KILLED and self.cell.check else []

    @property
    def examples(self) -> int:
        return self.cell.examples

    @property
    def seconds(self) -> float:
        return self.cell.seconds

    @property
    def wall_seconds(self) -> float:
        if self.matrix is not None:
            return sum(cell.wall_seconds for cell in self.matrix.values())
        return self.cell.wall_seconds


@dataclass
class MutationReport:
    """Everything one analysis found; :meth:`write` puts the reports in a directory."""

    results: list[MutantResult]
    gate: list[GateResult]
    config: dict[str, object]
    baseline_seconds: float
    timeout_seconds: float
    gate_seconds: float  # from the start until the gate's verdict
    mutation_seconds: float  # from the gate's verdict until the last mutant's (they overlap the gate)
    setup_seconds: float = 0.0
    matrix: bool = False

    def count(self, status: MutantStatus) -> int:
        return sum(result.status is status for result in self.results)

    @property
    def detected(self) -> int:
        return sum(result.status.detected for result in self.results)

    @property
    def valid(self) -> int:
        return sum(result.status.valid for result in self.results)

    @property
    def score(self) -> float | None:
        """detected / valid in percent (Stryker); None when no mutant is valid."""
        return 100.0 * self.detected / self.valid if self.valid else None

    @property
    def all_killed(self) -> bool:
        return all(result.status is MutantStatus.KILLED for result in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.all_killed else 1

    @property
    def total_seconds(self) -> float:
        return self.setup_seconds + self.gate_seconds + self.mutation_seconds

    def summary(self) -> str:
        score = "n/a" if self.score is None else f"{self.score:.1f}%"
        counts = ", ".join(f"{self.count(status)} {status.value}" for status in MutantStatus if self.count(status))
        return (f"mutation score {score} ({self.detected} detected of {self.valid} valid; {counts}) "
                f"in {self.total_seconds:.1f} s")

    def write(self, out_dir: Path | str = DEFAULT_OUT_DIR) -> dict[str, Path]:
        """Write mutation.json (Stryker schema) and mutation.md into ``out_dir``; return the paths."""
        from .mutation_report import markdown_summary, stryker_report

        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = {"json": out_dir / "mutation.json", "markdown": out_dir / "mutation.md"}
        paths["json"].write_text(json.dumps(stryker_report(self), indent=2) + "\n")
        paths["markdown"].write_text(markdown_summary(self))
        return paths


class GateFailure(Exception):
    """The suite failed the gate: a correct kernel failed, or a broken one passed. Nothing scored."""

    def __init__(self, gate: list[GateResult]) -> None:
        self.gate = gate
        lines = ["the fuzz suite failed the gate, so no mutant was scored:"]
        for entry in gate:
            lines.append("  " + entry.describe())
            if not entry.ok:
                lines.extend("    " + line for line in entry.cell.reason.splitlines()[:40])
        lines.append("fix the suite (or the reference kernel) first: a suite that fails the correct kernel, or "
                     "passes a broken one, cannot tell a killed mutant from noise")
        super().__init__("\n".join(lines))


# --------------------------------------------------------------------------------------------
# Running workers


@dataclass(frozen=True)
class _Job:
    key: str
    target: str
    cells: tuple[tuple[str, ...], ...]  # each cell: the checks of one fuzz.check run


@dataclass
class _Settings:
    budget: int
    seed: int
    device: str
    contract: str
    huge_probe: bool
    work_dir: Path  # the workers' working directory (Hypothesis writes there), removed afterwards
    reproducer_dir: Path
    env: dict[str, str]
    max_elements: int | None = None  # None: the strategies' default for the device


def _project_root() -> Path:
    return Path(__file__).absolute().parent.parent


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(_project_root())
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([root, *paths])
    env.setdefault("PYTHONFAULTHANDLER", "1")  # a crash leaves its Python stack in stderr
    # Workers run side by side, one per core: a torch thread pool per worker would fight over them.
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _absolute_target(target: str) -> str:
    """File targets are resolved here: workers run in their own working directory."""
    location, _, function = target.rpartition(":")
    if location.endswith(".py") or "/" in location or "\\" in location:
        return f"{Path(location).expanduser().resolve()}:{function}"
    return target


def _worker_command(job: _Job, cells: Sequence[tuple[str, ...]], out: Path, settings: _Settings) -> list[str]:
    command = [sys.executable, "-m", "fuzz.mutation_worker", "--target", job.target, "--out", str(out),
               "--budget", str(settings.budget), "--seed", str(settings.seed), "--device", settings.device,
               "--contract", settings.contract, "--reproducer-dir", str(settings.reproducer_dir)]
    if not settings.huge_probe:
        command.append("--no-huge-probe")
    if settings.max_elements is not None:
        command += ["--max-elements", str(settings.max_elements)]
    for cell in cells:
        command += ["--cell", ",".join(cell) if cell else ALL_CHECKS]
    return command


def _read_records(path: Path) -> list[dict]:
    """The complete JSON lines of a worker's output file (a line being written is skipped)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    records = []
    for line in text.split("\n")[:-1]:  # the last piece is "" or a line still being written
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return records


class _Timeout:
    """Seconds a worker may go without a result; mutable, since the mutants' value is only known
    once the gate has finished, and they may be running by then."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class _Runner:
    """Runs jobs in worker processes, a cell timeout each, resuming after a crash or a timeout."""

    def __init__(self, settings: _Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen] = set()
        self._stopping = False

    def run_job(self, job: _Job, timeout: _Timeout | float) -> list[CellResult]:
        timeout = timeout if isinstance(timeout, _Timeout) else _Timeout(timeout)
        results: list[CellResult | None] = [None] * len(job.cells)
        start = 0
        attempt = 0
        while start < len(job.cells):
            if self._stopping:
                raise KeyboardInterrupt("the mutation analysis was stopped")
            attempt += 1
            out = self.settings.work_dir / f"{job.key}.{attempt}.jsonl"
            err = self.settings.work_dir / f"{job.key}.{attempt}.stderr"
            records, returncode, timed_out, stopped_at = self._run_worker(
                job, job.cells[start:], out, err, timeout)
            for record, wall in records:
                index = start + int(record["cell"])
                raw = RawOutcome(result=record, returncode=None, timeout=timeout.seconds)
                status, reason = classify(raw)
                results[index] = CellResult(job.cells[index], status, reason, raw, wall)
            done = start + len(records)
            if done >= len(job.cells):
                break
            # The cell in progress when the worker died or was killed gets that as its verdict.
            stderr = err.read_text(errors="replace") if err.exists() else ""
            raw = RawOutcome(result=None, returncode=returncode, timed_out=timed_out, timeout=timeout.seconds,
                             stderr=stderr)
            status, reason = classify(raw)
            results[done] = CellResult(job.cells[done], status, reason, raw, stopped_at)
            start = done + 1
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    def _run_worker(self, job: _Job, cells, out: Path, err: Path, timeout: _Timeout):
        """Run one worker; return (records with their wall seconds, returncode, timed_out, seconds)."""
        command = _worker_command(job, cells, out, self.settings)
        with open(err, "wb") as stderr:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                       cwd=self.settings.work_dir, env=self.settings.env, start_new_session=True)
        with self._lock:
            self._processes.add(process)
        records: list[tuple[dict, float]] = []
        last = time.monotonic()
        timed_out = False
        try:
            while True:
                returncode = process.poll()
                found = _read_records(out)
                now = time.monotonic()
                for record in found[len(records):]:
                    records.append((record, now - last))
                    last = now
                if returncode is not None:
                    break
                if now - last > timeout.seconds or self._stopping:
                    timed_out = not self._stopping
                    _kill_group(process)
                    returncode = process.wait()
                    break
                time.sleep(0.05)
            # Records written just before the exit.
            now = time.monotonic()
            for record in _read_records(out)[len(records):]:
                records.append((record, now - last))
                last = now
        finally:
            with self._lock:
                self._processes.discard(process)
        return records, returncode, timed_out, time.monotonic() - last

    def stop(self) -> None:
        """Kill every running worker (Ctrl-C)."""
        self._stopping = True
        with self._lock:
            for process in list(self._processes):
                _kill_group(process)


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the worker and anything it started (it leads its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------------------------
# The analysis


def _positive(name: str, value: object, *, integer: bool, low: float) -> float:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if not ok or isinstance(value, bool) or not math.isfinite(value) or value < low:
        kind = "an int" if integer else "a number"
        raise InvalidArgument(f"{name}={value!r}; expected {kind} >= {low:g}.")
    return value


def _resolve_mutants(mutants) -> list:
    from mutants import MUTANTS, Mutant

    if mutants is None:
        return list(MUTANTS.values())
    if isinstance(mutants, (str, Mutant)):
        mutants = [mutants]
    chosen = []
    for item in mutants:
        if isinstance(item, Mutant):
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
    huge_probe: bool = True,
    max_elements: int | None = None,
    gate_correct: Sequence[tuple[str, str]] = GATE_CORRECT,
    gate_broken: Sequence[tuple[str, str]] = GATE_BROKEN,
    progress: Callable[[str, int, int], None] | None = None,
) -> MutationReport:
    """Gate the suite, run every mutant in its own worker process, and return the report.

    ``mutants``: names in :data:`mutants.MUTANTS` or :class:`mutants.Mutant` objects (default:
    all). ``jobs``: worker processes at once (default: the CPU count). ``budget``, ``seed``,
    ``device``, ``contract``: passed to ``fuzz.check`` in each worker. A worker is killed after
    ``max(timeout_factor * baseline_seconds, timeout_floor)`` seconds without a result, where
    the baseline is the slowest correct run of the gate. ``checks``: the checks of the suite
    (default: all of :data:`fuzz.checks.CHECKS`; the gate runs with the same selection).
    ``matrix``: each selected check alone against every mutant. ``out_dir``: where the reproducers
    of the counterexamples go (``out_dir/reproducers``) and where :meth:`MutationReport.write` is
    meant to put the reports; None: a temporary directory, removed afterwards.
    ``max_elements``: the largest M * N drawn (default: the strategies' default for the device,
    :func:`fuzz.strategies.default_max_elements`). Keep it large on a GPU: the reference launch
    policy loops over tiles only for rows of more than 4096 columns in a grid of more than two row
    blocks per multiprocessor (about 2**20 elements on an H200), and a mutation run capped at
    2**18 let the loop mutants survive there.
    ``gate_correct``/``gate_broken``: (label, target) pairs the suite must pass / catch.
    ``progress(phase, done, total)`` is called as workers finish. Raises :class:`GateFailure`
    when the gate fails, InvalidArgument for bad arguments.
    """
    from .checks import validate_checks
    from .runner import _device_option
    from .strategies import Contract

    setup_started = time.perf_counter()
    chosen = _resolve_mutants(mutants)
    jobs = (os.cpu_count() or 1) if jobs is None else int(_positive("jobs", jobs, integer=True, low=1))
    budget = int(_positive("budget", budget, integer=True, low=1))
    seed = int(_positive("seed", seed, integer=True, low=0))
    timeout_factor = float(_positive("timeout_factor", timeout_factor, integer=False, low=0))
    timeout_floor = float(_positive("timeout_floor", timeout_floor, integer=False, low=1))
    contract = Contract.parse(contract).value
    device = str(_device_option(device))
    if max_elements is not None:
        max_elements = int(_positive("max_elements", max_elements, integer=True, low=1))
    selected = validate_checks(checks)
    suite: tuple[str, ...] = () if checks is None else selected  # () is every check
    if not gate_correct or not gate_broken:
        raise InvalidArgument("the gate needs at least one correct and one broken implementation.")

    keep = out_dir is not None
    base = (Path(out_dir) if keep else Path(tempfile.mkdtemp(prefix="lse-mutants-"))).resolve()
    base.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix=".work-", dir=base))
    settings = _Settings(budget=budget, seed=seed, device=device, contract=contract, huge_probe=huge_probe,
                         max_elements=max_elements, work_dir=work_dir, reproducer_dir=base / "reproducers", env=_worker_env())
    runner = _Runner(settings)
    config = {"budget": budget, "seed": seed, "device": device, "contract": contract, "jobs": jobs,
              "timeout_factor": timeout_factor, "timeout_floor": timeout_floor, "matrix": matrix,
              "huge_offset_probe": huge_probe, "max_elements": max_elements, "checks": list(selected)}
    setup_seconds = time.perf_counter() - setup_started

    try:
        # The gate and the mutants share one pool, gate first: mutants start on the cores the gate
        # leaves free instead of waiting for it (on a GPU the gate is mostly compile time). Until
        # the gate has passed, a mutant runs under the gate's generous timeout; then under
        # max(k * baseline, floor), and nothing is scored unless the gate passed.
        gate_started = time.perf_counter()
        gate_jobs = [(label, _absolute_target(target), "pass") for label, target in gate_correct]
        gate_jobs += [(label, _absolute_target(target), "fail") for label, target in gate_broken]
        gate_timeout = max(timeout_floor, 600.0)
        mutant_timeout = _Timeout(gate_timeout)
        check_cells = tuple((name,) for name in selected) if matrix else (suite,)
        gate_list = [_Job(f"gate{i}", target, (suite,)) for i, (_, target, _) in enumerate(gate_jobs)]
        mutant_list = [_Job(f"m{i}-{m.name}", _absolute_target(m.target), check_cells) for i, m in enumerate(chosen)]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            try:
                gate_futures = [pool.submit(runner.run_job, job, gate_timeout) for job in gate_list]
                mutant_futures = [pool.submit(runner.run_job, job, mutant_timeout) for job in mutant_list]
                # 1. The gate. Correct runs are also the baseline for the timeout.
                cells = _collect(gate_futures, lambda done, total: progress and progress("gate", done, total))
                gate = [GateResult(label, target, must, cells[i][0]) for i, (label, target, must) in enumerate(gate_jobs)]
                gate_ended = time.perf_counter()
                gate_seconds = gate_ended - gate_started
                if not all(entry.ok for entry in gate):
                    raise GateFailure(gate)
                baseline = max(entry.cell.wall_seconds for entry in gate if entry.must == "pass")
                timeout = max(timeout_factor * baseline, timeout_floor)
                mutant_timeout.seconds = timeout
                # 2. The mutants.
                cells = _collect(mutant_futures, lambda done, total: progress and progress("mutants", done, total))
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                runner.stop()
                raise
        mutation_seconds = time.perf_counter() - gate_ended  # the mutants' time beyond the gate's
        results = [_mutant_result(m, cells[i], matrix) for i, m in enumerate(chosen)]
    except BaseException:
        runner.stop()
        raise
    finally:
        shutil.rmtree(work_dir if keep else base, ignore_errors=True)

    return MutationReport(results=results, gate=gate, config=config, baseline_seconds=baseline,
                          timeout_seconds=timeout, gate_seconds=gate_seconds, mutation_seconds=mutation_seconds,
                          setup_seconds=setup_seconds, matrix=matrix)


def _collect(futures: list, on_done) -> list[list[CellResult]]:
    """The futures' results in order, reporting each completion as it comes."""
    index = {future: i for i, future in enumerate(futures)}
    results: list[list[CellResult] | None] = [None] * len(futures)
    on_done(0, len(futures))
    for done, future in enumerate(as_completed(futures), start=1):
        results[index[future]] = future.result()
        on_done(done, len(futures))
    return results  # type: ignore[return-value]


def _mutant_result(mutant, cells: list[CellResult], matrix: bool) -> MutantResult:
    if not matrix:
        cell = cells[0]
        return MutantResult(mutant, cell.status, cell.reason, cell)
    by_check = {cell.checks[0]: cell for cell in cells}
    killing = [cell for cell in cells if cell.status is MutantStatus.KILLED]
    # Overall: killed by any check; otherwise the worst thing that happened.
    for status in (MutantStatus.KILLED, MutantStatus.TIMEOUT, MutantStatus.RUNTIME_ERROR,
                   MutantStatus.COMPILE_ERROR, MutantStatus.SURVIVED):
        chosen = [cell for cell in cells if cell.status is status]
        if chosen:
            break
    if killing:
        expected = by_check.get(mutant.expected_check)
        chosen = [expected] if expected in killing else killing
    cell = chosen[0]
    return MutantResult(mutant, cell.status, cell.reason, cell, matrix=by_check)
