"""Grading candidates: one verdict per implementation, for ``lse-fuzz check`` and ``lse-fuzz grade``.

:func:`evaluate` grades one TARGET: static findings from its source, then the fuzz suite with
the candidate in an isolated worker (:mod:`fuzz.isolation`), then, on a GPU and when asked, its
achieved bandwidth on a fixed shape. The result is a JSON-able record whose ``verdict`` is a
:class:`Verdict`. ``lse-fuzz check`` grades one target in this process; :func:`grade` grades a
batch with ``jobs`` driver processes (each runs the fuzz runner for one candidate at a time, with
that candidate's worker), writing the report after every candidate.

Reports (``--out DIR``): ``grade.jsonl`` (one record per candidate, sorted by candidate), and
``grade.csv``, both rewritten atomically (temporary file + ``os.replace``) after each candidate,
so an interrupted run leaves a valid report of the finished ones, which ``--resume`` keeps.
"""

from __future__ import annotations

import contextlib
import csv
import enum
import hashlib
import io
import json
import math
import os
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path

from reference.errors import InvalidArgument

from . import isolation_worker as wire

__all__ = [
    "Candidate",
    "GradeOptions",
    "Verdict",
    "discover",
    "evaluate",
    "grade",
    "render_markdown",
    "verdict_of",
]

TOOL_VERSION = "0.1.0"
DEFAULT_BUDGET = 200
DEFAULT_GRADE_TIMEOUT = 900.0
DEFAULT_BENCH_SHAPE = (8192, 8192)
DRIVER_GRACE = 300.0
"""Seconds a driver may run past a candidate's timeout (oracle, shrinking) before it is killed."""

REPORT_JSONL = "grade.jsonl"
REPORT_CSV = "grade.csv"


class Verdict(str, enum.Enum):
    """What became of one candidate."""

    PASS = "pass"  # every example passed every check
    FAIL = "fail"  # a check failed (``check`` names it); flaky failures count here too
    ERROR = "error"  # the candidate raised an exception
    CRASH = "crash"  # its worker died: a signal (segfault, abort), sys.exit/os._exit, out of memory
    TIMEOUT = "timeout"  # a call hung past the per-call limit, or the candidate's time budget ran out
    LOAD_ERROR = "load_error"  # it could not be used: missing file, syntax error, import error, no such
    #                            function, wrong signature, or it crashed or hung while importing
    INTERNAL_ERROR = "internal_error"  # the grader itself failed on this candidate (a bug to report)


def verdict_of(*, status: object = None, outcome: object = None, loaded: bool = True) -> Verdict:
    """The one mapping from a raw result to a verdict.

    ``loaded``: whether the target loaded in its worker. ``outcome``: the
    :class:`fuzz.isolation.Outcome` of a lost worker (crash, exit, out of memory, timeout).
    ``status``: the runner's :class:`fuzz.runner.Status` when the fuzz run finished.
    """
    from .isolation import Outcome
    from .runner import Status

    if not loaded:
        return Verdict.LOAD_ERROR
    if outcome is not None:
        outcome = Outcome(outcome)
        if outcome is Outcome.TIMED_OUT:
            return Verdict.TIMEOUT
        if outcome.fatal:
            return Verdict.CRASH
        return Verdict.ERROR if outcome is Outcome.RAISED else Verdict.PASS
    return {Status.PASSED: Verdict.PASS, Status.FAILED: Verdict.FAIL, Status.FLAKY: Verdict.FAIL,
            Status.ERROR: Verdict.ERROR}[Status(status)]


EXIT_CODES: dict[Verdict, int] = {
    Verdict.PASS: 0, Verdict.FAIL: 1, Verdict.ERROR: 1, Verdict.CRASH: 1, Verdict.TIMEOUT: 1,
    Verdict.LOAD_ERROR: 2, Verdict.INTERNAL_ERROR: 3,
}
"""Exit code of ``lse-fuzz check`` for each verdict."""


def _runtime_flags() -> dict:
    from .static_scan import Severity

    return {
        "prints": (Severity.INFO, "wrote to stdout or stderr while running (captured; tolerated)"),
        "mutates_input": (Severity.CHEAT, "changed its input during a call"),
    }


RUNTIME_FLAGS = _runtime_flags()
"""Flags seen while running (besides the static ones of :data:`fuzz.static_scan.FLAGS`)."""


# --------------------------------------------------------------------------------------------
# Options


@dataclass(frozen=True)
class GradeOptions:
    """Everything that decides a verdict, validated once (:meth:`validated`)."""

    budget: int = DEFAULT_BUDGET
    seed: int = 0
    private_seed: str | None = field(default=None, repr=False)  # never written to a report
    contract: str = "strict"
    checks: tuple[str, ...] | None = None
    device: str = "cpu"
    call_timeout: float = 60.0
    timeout: float | None = None
    memory_limit: int | None = None  # bytes; None: fuzz.isolation.default_memory_limit; 0: none
    threads: int | None = None
    jobs: int = 1  # workers running at once (shares the default memory limit); not part of the key
    huge_offsets: bool = False
    max_elements: int | None = None  # largest M * N drawn (default: the strategies' default for the device)
    profile: str | None = None
    bench: bool = False
    bench_shape: tuple[int, int] = DEFAULT_BENCH_SHAPE
    bench_dtype: str = "float32"

    def validated(self) -> GradeOptions:
        from .checks import validate_checks
        from .profiles import PROFILES
        from .strategies import Contract

        for name, low in (("budget", 1), ("seed", 0), ("max_elements", 1)):
            value = getattr(self, name)
            if name == "max_elements" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidArgument(f"{name}={value!r}; expected an int >= {low}.")
        for name in ("call_timeout", "timeout"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InvalidArgument(f"{name}={value!r}; expected a number of seconds > 0.")
        if self.private_seed is not None and not str(self.private_seed):
            raise InvalidArgument("private_seed=''; give a non-empty secret, or leave the option out.")
        if self.memory_limit is not None and (not isinstance(self.memory_limit, int) or self.memory_limit < 0):
            raise InvalidArgument(f"memory_limit={self.memory_limit!r}; expected bytes >= 0 (0: no limit).")
        if self.profile is not None and self.profile not in PROFILES:
            raise InvalidArgument(f"profile={self.profile!r}; expected one of {', '.join(PROFILES)}.")
        rows, cols = self.bench_shape
        if rows < 1 or cols < 1:
            raise InvalidArgument(f"bench_shape={self.bench_shape!r}; expected M x N with M, N >= 1.")
        if self.bench_dtype not in ("float32", "float16", "bfloat16", "float64"):
            raise InvalidArgument(f"bench_dtype={self.bench_dtype!r}; expected float32, float16, bfloat16 or float64.")
        checks = None if self.checks is None else validate_checks(self.checks)
        return replace(self, contract=Contract.parse(self.contract).value, checks=checks,
                       device=parse_device(self.device))

    @property
    def effective_seed(self) -> int:
        """The seed the fuzzer uses: the public seed, or a hash of it with the private seed."""
        if self.private_seed is None:
            return self.seed
        digest = hashlib.sha256(f"lse-fuzz\0{self.seed}\0{self.private_seed}".encode()).digest()
        return int.from_bytes(digest[:8], "big")

    @property
    def seed_id(self) -> str:
        """A fingerprint of the effective seed: equal runs are recognisable, the seed stays secret."""
        return hashlib.sha256(f"lse-fuzz-seed\0{self.effective_seed}".encode()).hexdigest()[:12]

    def public(self) -> dict[str, object]:
        """The options as written to reports: the private seed only as a yes/no."""
        data = asdict(self)
        data["private_seed"] = self.private_seed is not None
        data["checks"] = None if self.checks is None else list(self.checks)
        data["bench_shape"] = list(self.bench_shape)
        data["seed_id"] = self.seed_id
        return data

    def key(self) -> str:
        """Identifies the options that decide verdicts: records with another key are re-graded."""
        data = self.public()
        for name in ("threads", "jobs"):  # speed, not verdicts
            data.pop(name)
        data["tool"] = TOOL_VERSION
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def to_wire(self) -> dict[str, object]:
        data = asdict(self)
        data["checks"] = None if self.checks is None else list(self.checks)
        data["bench_shape"] = list(self.bench_shape)
        return data

    @classmethod
    def from_wire(cls, data: dict) -> GradeOptions:
        data = dict(data)
        data["checks"] = None if data["checks"] is None else tuple(data["checks"])
        data["bench_shape"] = tuple(data["bench_shape"])
        return cls(**data)


def torch_threads(options: GradeOptions) -> int:
    """Torch intra-op threads for each process of a run: a driver (or ``check``) and its worker.

    One on the CPU, where the fuzzing process's tensors are small and an OpenMP pool spins against
    the worker's on the same cores (measured: 10x slower calls on 2 cores). On CUDA, an equal share
    of the cores among the 2 * jobs processes: 16 threads in each of 28 processes on a 16-core GPU
    host measured about 2 s of host time per example.
    """
    if options.device.startswith("cpu"):
        return 1
    return max(1, (os.cpu_count() or 1) // (2 * max(1, options.jobs)))


def use_torch_threads(options: GradeOptions) -> None:
    """Give this (driving) process its :func:`torch_threads`."""
    import torch

    torch.set_num_threads(torch_threads(options))


def parse_device(device: str | None) -> str:
    """'auto' (CUDA when present), 'cpu', 'cuda' or 'cuda:N' -> a device string; InvalidArgument
    naming the problem otherwise."""
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise InvalidArgument(f"device={device!r}; expected auto, cpu, cuda or cuda:N.") from None
    if resolved.type not in ("cpu", "cuda"):
        raise InvalidArgument(f"device={device!r}; expected auto, cpu, cuda or cuda:N.")
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidArgument(f"device={device!r}, but no CUDA device is available: use --device cpu.")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise InvalidArgument(f"device={device!r}, but only {torch.cuda.device_count()} CUDA device(s) exist.")
    return str(resolved)


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise InvalidArgument(f"bench_shape={text!r}; expected MxN, e.g. 8192x8192.") from None
    if rows < 1 or cols < 1:
        raise InvalidArgument(f"bench_shape={text!r}; expected M and N >= 1.")
    return rows, cols


# --------------------------------------------------------------------------------------------
# Candidates


@dataclass(frozen=True)
class Candidate:
    name: str  # as reports show it: relative to the working directory when inside it
    path: str  # absolute file path
    target: str  # path:function

    @property
    def sha256(self) -> str | None:
        try:
            return hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        except OSError:
            return None


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def discover(paths: Iterable[str], *, function: str = "lse") -> list[Candidate]:
    """The candidates under ``paths`` (files, ``file.py:func``, or directories searched for
    ``*.py``), sorted and without duplicates. InvalidArgument for a missing path or a directory
    with no candidate in it."""
    found: dict[tuple[str, str], Candidate] = {}
    for given in paths:
        location, func = given, function
        if ":" in given and given.rpartition(":")[0].endswith(".py"):
            location, _, func = given.rpartition(":")
        path = Path(location).expanduser()
        if not path.exists():
            raise InvalidArgument(f"path={given!r}: no such file or directory.")
        if path.is_dir():
            files = sorted(
                f for f in path.rglob("*.py")
                if f.name != "__init__.py"
                and not any(part.startswith(".") or part == "__pycache__" for part in f.relative_to(path).parts)
            )
            if not files:
                raise InvalidArgument(f"path={given!r}: no candidate *.py files in this directory.")
        elif path.suffix != ".py":
            raise InvalidArgument(f"path={given!r} is not a .py file.")
        else:
            files = [path]
        for file in files:
            resolved = file.resolve()
            key = (str(resolved), func)
            found.setdefault(key, Candidate(name=_display(resolved) + ("" if func == function else f":{func}"),
                                            path=str(resolved), target=f"{resolved}:{func}"))
    return sorted(found.values(), key=lambda c: c.name)


def schedule(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The order candidates start in: those that define a Triton kernel first, then the rest.

    A kernel is compiled on the host for each new launch configuration the fuzzer reaches (about
    a second each on an H200's host; dozens per candidate), so kernel candidates take minutes
    where a plain-PyTorch or broken one takes seconds. Starting the long ones first (longest
    processing time first) keeps a batch from ending on a tail of one compiling candidate while
    the other jobs sit idle. Each group keeps its name order; reports are sorted by name anyway.
    """
    from .static_scan import scan

    def defines_kernel(candidate: Candidate) -> bool:
        try:
            return not any(f.flag == "no_triton_kernel" for f in scan(candidate.path))
        except (OSError, SyntaxError, ValueError):
            return False  # it will not load: seconds, not minutes

    return sorted(candidates, key=lambda c: not defines_kernel(c))  # stable: name order within each group


# --------------------------------------------------------------------------------------------
# Grading one candidate


def _base_record(candidate: Candidate, options: GradeOptions) -> dict[str, object]:
    return {
        "candidate": candidate.name,
        "target": candidate.target,
        "sha256": candidate.sha256,
        "verdict": None,
        "check": None,
        "reason": "",
        "details": "",
        "counterexample": None,
        "reproducer": None,
        "replay": None,
        "examples": None,
        "calls": 0,
        "seconds": 0.0,
        "candidate_seconds": 0.0,
        "flags": [],
        "noise": None,
        "bench": None,
        "seed": options.seed,
        "seed_id": options.seed_id,
        "key": options.key(),
        "options": options.public(),
        "tool": TOOL_VERSION,
    }


def replay_input_command(target: str, path: Path | str) -> str:
    return f"python -m fuzz check {target} --replay {path}"


def evaluate(
    candidate: Candidate | str,
    options: GradeOptions,
    *,
    reproducer_dir: Path | str,
    guard: Callable[[], contextlib.AbstractContextManager] | None = None,
    exclusive: Callable[[], contextlib.AbstractContextManager] | None = None,
    baselines: dict | None = None,
    on_loaded: Callable[[], None] | None = None,
) -> dict[str, object]:
    """Grade one candidate; a record (see the module docstring). Never raises for anything the
    candidate does; InvalidArgument-style problems become a ``load_error`` verdict.

    ``guard`` wraps each call of the candidate (grading shares a GPU: calls hold a shared lock),
    ``exclusive`` the benchmark (which must have the GPU to itself). ``on_loaded`` is called once
    the target has loaded in its worker, before fuzzing starts.
    """
    from . import static_scan
    from .isolation import IsolatedImpl, LoadFailed, WorkerLost, default_memory_limit, resolve_target, save_input
    from .runner import check

    if isinstance(candidate, str):
        target = resolve_target(candidate)
        path = target.rpartition(":")[0]
        candidate = Candidate(name=candidate, path=path if path.endswith(".py") else "", target=target)
    started = time.monotonic()
    record = _base_record(candidate, options)
    if candidate.path:
        try:
            record["flags"] = [f.to_dict() for f in static_scan.scan(candidate.path)]
        except (SyntaxError, ValueError, OSError):
            pass  # resolve_target below reports it
    impl = None
    memory_limit = options.memory_limit
    if memory_limit is None:
        memory_limit = default_memory_limit(options.device, jobs=options.jobs, huge_offsets=options.huge_offsets)
    try:
        threads = torch_threads(options) if options.threads is None else options.threads
        impl = IsolatedImpl(candidate.target, device=options.device, call_timeout=options.call_timeout,
                            timeout=options.timeout, memory_limit=memory_limit, threads=threads)
        impl.guard = guard
        impl.start()
    except WorkerLost as lost:
        _finish(record, started, impl, verdict=Verdict.LOAD_ERROR,
                reason=f"loading the target failed: the worker {lost.outcome.value.replace('_', ' ')}: {lost.detail}",
                details=lost.stderr)
        return record
    except (LoadFailed, InvalidArgument) as exc:
        _finish(record, started, impl, verdict=Verdict.LOAD_ERROR, reason=str(exc))
        return record
    if on_loaded is not None:
        on_loaded()
    try:
        result = check(impl, budget=options.budget, seed=options.effective_seed, device=options.device,
                       contract=options.contract, checks=options.checks, profile=options.profile,
                       reproducer_dir=reproducer_dir, huge_offsets=options.huge_offsets,
                       max_elements=options.max_elements, target=candidate.target)
    except WorkerLost as lost:
        verdict = verdict_of(outcome=lost.outcome)
        record["reason"] = f"{lost.outcome.value.replace('_', ' ')}: {lost.detail}"
        record["details"] = lost.stderr
        if lost.input is not None:
            x = lost.input
            path = save_input(reproducer_dir, x, target=candidate.target, outcome=lost.outcome.value, detail=lost.detail)
            record["reproducer"] = str(path)
            record["replay"] = replay_input_command(candidate.target, path)
            record["counterexample"] = {
                "description": f"{wire.dtype_name(x.dtype)} {tuple(x.shape)} strides={tuple(x.stride())} "
                               f"storage_offset={x.storage_offset()} on {x.device.type}",
                "shape": list(x.shape), "dtype": wire.dtype_name(x.dtype), "strides": list(x.stride()),
                "storage_offset": x.storage_offset(),
            }
        _finish(record, started, impl, verdict=verdict)
        return record
    except BaseException:  # Ctrl-C, or a bug here: do not leave the worker behind
        impl.close()
        raise
    record["result"] = result.to_dict()
    record["examples"] = result.examples
    record["check"] = result.check
    verdict = verdict_of(status=result.status)
    if result.failure is not None:
        record["details"] = result.failure.message()
        record["replay"] = result.failure.replay
        record["reproducer"] = None if result.reproducer is None else str(result.reproducer)
        head = result.failure.message().splitlines()[0]
        record["reason"] = head if result.status.value != "flaky" else f"flaky: {head}"
        if result.counterexample is not None:
            record["counterexample"] = record["result"]["counterexample"]
    else:
        record["reason"] = f"{result.examples} examples passed every check"
    if verdict is Verdict.PASS and options.bench and options.device.startswith("cuda"):
        try:
            with exclusive() if exclusive else contextlib.nullcontext():
                record["bench"] = bench_candidate(impl, options, baselines)
        except WorkerLost as lost:
            record["bench"] = {"error": f"{lost.outcome.value}: {lost.detail}"}
        except Exception as exc:
            record["bench"] = {"error": f"{type(exc).__name__}: {exc}"}
    _finish(record, started, impl, verdict=verdict)
    return record


def _finish(record: dict, started: float, impl, *, verdict: Verdict, reason: str | None = None,
            details: str | None = None) -> None:
    if impl is not None:
        impl.close()
        record["calls"] = impl.calls
        record["candidate_seconds"] = round(impl.candidate_seconds, 3)
        noise = impl.noise()
        if noise.any:
            record["noise"] = noise.to_dict()
        if impl.input_changes and record.get("check") != "input_unchanged":
            # The runner compares the input after an example's first call only; the worker sees
            # every call, so a candidate that writes into its input later is flagged here.
            record["flags"].append({"flag": "mutates_input", "severity": RUNTIME_FLAGS["mutates_input"][0].value,
                                    "message": f"changed its input in {impl.input_changes} of {impl.calls} calls "
                                               "(input_unchanged inspects an example's first call only)",
                                    "lines": []})
        # A lost worker's stderr is its crash report, not noise.
        if noise.any and verdict not in (Verdict.CRASH, Verdict.TIMEOUT, Verdict.LOAD_ERROR):
            record["flags"].append({"flag": "prints", "severity": RUNTIME_FLAGS["prints"][0].value,
                                    "message": f"printed while running: {noise.describe()}", "lines": []})
    record["verdict"] = verdict.value
    if reason is not None:
        record["reason"] = reason
    if details is not None:
        record["details"] = details
    record["seconds"] = round(time.monotonic() - started, 3)


def evaluate_replay(target: str, path: Path | str, options: GradeOptions) -> dict[str, object]:
    """Run one saved input through the candidate in a worker: a reproducer of the runner (its
    checks run again) or the input of a lost call (one call, judged on the spot)."""
    from . import runner
    from .isolation import CandidateRaised, IsolatedImpl, LoadFailed, WorkerLost, is_saved_input, load_input

    path = Path(path)
    if not path.is_file():
        raise InvalidArgument(f"--replay={str(path)!r}: no such file.")
    started = time.monotonic()
    candidate = Candidate(name=target, path=target.rpartition(":")[0] if target.rpartition(":")[0].endswith(".py")
                          else "", target=target)
    record = _base_record(candidate, options)
    record["reproducer"] = str(path)
    saved_input = is_saved_input(path)
    record["replay"] = replay_input_command(target, path) if saved_input \
        else f"python -m fuzz replay {path} --impl {target}"
    impl = IsolatedImpl(target, device=options.device, call_timeout=options.call_timeout, timeout=options.timeout,
                        memory_limit=options.memory_limit, threads=options.threads)
    try:
        impl.start()
    except LoadFailed as exc:
        _finish(record, started, impl, verdict=Verdict.LOAD_ERROR, reason=str(exc))
        return record
    except WorkerLost as lost:
        _finish(record, started, impl, verdict=Verdict.LOAD_ERROR, reason=f"loading the target failed: {lost.detail}")
        return record
    try:
        if saved_input:
            x, meta = load_input(path, options.device)
            record["counterexample"] = {"description": f"{wire.dtype_name(x.dtype)} {tuple(x.shape)} "
                                                       f"strides={tuple(x.stride())} storage_offset={x.storage_offset()}"}
            before = wire.bits(x).clone()
            try:
                out = impl(x)
            except CandidateRaised as exc:
                _finish(record, started, impl, verdict=Verdict.ERROR, reason=f"{type(exc).__name__}: {exc}",
                        details=exc.traceback_text)
                return record
            verdict, check_name, reason = _judge_one(x, out, before)
            record["check"] = check_name
            _finish(record, started, impl, verdict=verdict, reason=reason)
            return record
        result = runner.replay(path, impl, device=options.device, target=target)
    except WorkerLost as lost:
        _finish(record, started, impl, verdict=verdict_of(outcome=lost.outcome),
                reason=f"{lost.outcome.value.replace('_', ' ')}: {lost.detail}", details=lost.stderr)
        return record
    record["result"] = result.to_dict()
    record["check"] = result.check
    record["examples"] = result.examples
    if result.failure is not None:
        record["details"] = result.failure.message()
    reason = result.failure.message().splitlines()[0] if result.failure is not None else "the saved example passes now"
    _finish(record, started, impl, verdict=verdict_of(status=result.status), reason=reason)
    return record


def _judge_one(x, out, before) -> tuple[Verdict, str | None, str]:
    """Judge one output the way the first-call checks do (contract, input unchanged, agreement)."""
    import torch

    from reference import compare

    rows = x.shape[0]
    if not isinstance(out, torch.Tensor):
        return Verdict.FAIL, "output_contract", f"returned a {type(out).__name__}, not a torch.Tensor"
    if tuple(out.shape) != (rows,) or not out.dtype.is_floating_point or out.device.type == "meta":
        return Verdict.FAIL, "output_contract", \
            f"returned shape {tuple(out.shape)}, dtype {out.dtype} on {out.device}; expected ({rows},) floating on {x.device}"
    changed = before != wire.bits(x)
    if changed.any():
        row, col = (int(i) for i in torch.nonzero(changed)[0])
        return Verdict.FAIL, "input_unchanged", f"the call changed the input at x[{row}, {col}]"
    comparison = compare(x, out)
    row = comparison.first_mismatch()
    if row is not None:
        return Verdict.FAIL, "agreement", (
            f"row {row} differs from the float64 reference: expected {float(comparison.expected[row])!r}, "
            f"got {float(comparison.got[row])!r}, allowed error {float(comparison.bound[row]):.6g} "
            f"({comparison.mismatches} of {rows} rows fail)")
    return Verdict.PASS, None, "the saved input passes now"


def format_record(record: dict) -> str:
    """The human summary of one record (what ``lse-fuzz check`` prints)."""
    verdict = record["verdict"]
    head = f"{verdict.upper()} {record['target']}"
    if record.get("check"):
        head += f": check {record['check']!r}"
    lines = [head]
    seconds = record.get("seconds") or 0.0
    if record.get("examples") is not None:
        lines.append(f"  {record['examples']} examples, {record.get('calls', 0)} calls in {seconds:.1f} s "
                     f"({record.get('candidate_seconds', 0):.1f} s in the implementation); "
                     f"contract {record['options']['contract']}, seed {record['seed']}"
                     + (" + private seed" if record["options"].get("private_seed") else ""))
    details = (record.get("details") or "").rstrip()
    if verdict in (Verdict.FAIL.value, Verdict.ERROR.value) and details:
        lines += ["  " + line for line in details.splitlines()]
    else:
        lines.append(f"  {record.get('reason', '')}")
        example = record.get("counterexample")
        if example:
            lines.append(f"  input:    {example['description']}")
        if details:
            tail = [line for line in details.splitlines()
                    if "isolation_worker.py" not in line and 'File "<string>"' not in line
                    and not line.startswith("Extension modules:")][-15:]
            lines.append("  worker stderr (last lines):")
            lines += ["    " + line for line in tail]
        if record.get("replay") and verdict != Verdict.PASS.value:
            lines.append(f"  replay:   {record['replay']}")
    for flag in record.get("flags", []):
        lines.append(f"  flag:     {flag['flag']} ({flag['severity']}): {flag['message']}")
    bench = record.get("bench")
    if bench:
        if "error" in bench:
            lines.append(f"  bandwidth: not measured ({bench['error']})")
        else:
            text = f"  bandwidth: {bench['gbps']} GB/s on {bench['shape'][0]}x{bench['shape'][1]} {bench['dtype']}"
            for name in ("reference", "torch"):
                if f"speedup_vs_{name}" in bench:
                    text += f"; {bench[f'speedup_vs_{name}']}x {name} ({bench[f'{name}_gbps']} GB/s)"
            if not bench.get("output_ok", True):
                text += "; WARNING: its output on the benchmark input is wrong"
            lines.append(text)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Bandwidth


def bench_input(options: GradeOptions):
    import torch

    rows, cols = options.bench_shape
    generator = torch.Generator(device=options.device).manual_seed(options.effective_seed)
    x = torch.randn(rows, cols, generator=generator, device=options.device, dtype=torch.float32)
    return x.to(getattr(torch, options.bench_dtype))


def bench_bytes(options: GradeOptions) -> int:
    import torch

    rows, cols = options.bench_shape
    return rows * cols * getattr(torch, options.bench_dtype).itemsize + 4 * rows


def time_in_process(fn, x, *, min_seconds: float = 0.2, repeats: int = 5) -> float:
    """Seconds per call of a trusted function, timed like the candidate (loops between syncs)."""
    import torch

    for _ in range(3):
        fn(x)
    iters = 1
    while True:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iters):
            fn(x)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        if seconds >= min_seconds or iters >= 1 << 16:
            break
        iters *= max(2, min(16, int(min_seconds / max(seconds, 1e-6))))
    best = seconds
    for _ in range(repeats - 1):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iters):
            fn(x)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best / iters


def measure_baselines(options: GradeOptions) -> dict[str, float]:
    """Seconds per call of reference.lse and torch.logsumexp on the benchmark input."""
    import torch

    import reference

    x = bench_input(options)
    baselines = {"reference": time_in_process(reference.lse, x),
                 "torch": time_in_process(lambda t: torch.logsumexp(t, dim=1), x)}
    del x
    torch.cuda.empty_cache()
    return baselines


_BENCH_EXPECTED: dict[tuple, tuple] = {}  # per driver: the benchmark input, its oracle and tolerance


def bench_candidate(impl, options: GradeOptions, baselines: dict | None) -> dict[str, object]:
    """Achieved bandwidth (bytes = M*N*elem + 4M) and speed against the baselines.

    The output of the timed calls is checked against the oracle too: a fast wrong answer (or
    one from a cache) is marked ``output_ok: false``.
    """
    import torch

    from reference import allowed_error, is_close, lse_reference

    seconds, out = impl.bench(shape=options.bench_shape, dtype=getattr(torch, options.bench_dtype),
                              seed=options.effective_seed)
    key = (options.bench_shape, options.bench_dtype, options.effective_seed, options.device)
    if key not in _BENCH_EXPECTED:
        x = bench_input(options)
        expected = lse_reference(x).cpu()
        _BENCH_EXPECTED[key] = (x.shape[0], expected, allowed_error(x, expected))
        del x
    rows, expected, bound = _BENCH_EXPECTED[key]
    output_ok = isinstance(out, torch.Tensor) and tuple(out.shape) == (rows,) and out.dtype.is_floating_point \
        and bool(is_close(out.detach().cpu().to(torch.float64), expected, bound).all())
    nbytes = bench_bytes(options)
    result: dict[str, object] = {
        "shape": list(options.bench_shape), "dtype": options.bench_dtype, "bytes": nbytes,
        "seconds": seconds, "gbps": round(nbytes / seconds / 1e9, 1), "output_ok": output_ok,
    }
    for name, base in (baselines or {}).items():
        result[f"{name}_gbps"] = round(nbytes / base / 1e9, 1)
        result[f"speedup_vs_{name}"] = round(base / seconds, 3)
    return result


# --------------------------------------------------------------------------------------------
# A GPU shared by several drivers


class GpuLock:
    """Calls share the GPU (shared lock); a benchmark has it alone (exclusive lock).

    A turnstile file keeps a waiting benchmark from being starved by a stream of calls. The
    benchmark holds the turnstile for at most ``patience`` seconds while it waits: a call that
    hangs while holding its shared lock (until its call timeout) then delays that one benchmark,
    not every other candidate's calls queued behind the turnstile.
    """

    def __init__(self, directory: Path | str, *, patience: float = 1.0) -> None:
        directory = Path(directory)
        self._turnstile = open(directory / ".gpu-turnstile.lock", "a+")
        self._main = open(directory / ".gpu.lock", "a+")
        self.patience = patience

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        import fcntl

        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        fcntl.flock(self._main, fcntl.LOCK_SH)
        fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        import fcntl

        while not self._try_exclusive():
            # A call has held the GPU for a while (a hang, a long compile): let the calls queued
            # behind the turnstile through, then queue again.
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
            time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)

    def _try_exclusive(self) -> bool:
        """Take the turnstile, then wait up to ``patience`` for the exclusive lock; True if held."""
        import fcntl

        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        deadline = time.monotonic() + self.patience
        while True:
            try:
                fcntl.flock(self._main, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.002)


# --------------------------------------------------------------------------------------------
# Drivers: the processes that grade candidates in parallel


def driver_main(channel_fd: int, args: dict) -> int:
    """Grade the candidates the parent sends, one at a time, until it closes the channel."""
    conn = Connection(channel_fd)
    options = GradeOptions.from_wire(args["options"])
    use_torch_threads(options)
    lock = GpuLock(args["lock_dir"]) if args.get("lock_dir") else None
    while True:
        try:
            header, _ = wire.recv_message(conn)
        except (EOFError, OSError):
            return 0
        if header.get("op") != "grade":
            return 0
        candidate = Candidate(**header["candidate"])
        try:
            record = evaluate(candidate, options, reproducer_dir=header["reproducer_dir"],
                              guard=lock.shared if lock else None, exclusive=lock.exclusive if lock else None,
                              baselines=args.get("baselines"))
        except BaseException as exc:  # a bug in the grader: report it, keep going
            import traceback

            record = _base_record(candidate, options)
            record.update(verdict=Verdict.INTERNAL_ERROR.value, reason=f"{type(exc).__name__}: {exc}",
                          details=traceback.format_exc())
        wire.send_message(conn, {"op": "result", "record": record})


class _Driver:
    def __init__(self, zygote, log_path: Path, args: dict) -> None:
        from .isolation import ZYGOTE_ADDRESS_ENV, worker_environment, worker_sys_path

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        log = open(log_path, "ab")
        devnull = open(os.devnull, "wb")
        env = dict(worker_environment(), **{ZYGOTE_ADDRESS_ENV: zygote.address})
        config = {"entry": "fuzz.grading:driver_main", "cwd": os.getcwd(), "env": env,
                  "sys_path": worker_sys_path(), "args": args}
        try:
            self.pid = zygote.spawn(config, (theirs.fileno(), devnull.fileno(), log.fileno()))
        finally:
            theirs.close()
            log.close()
            devnull.close()
        self.conn = Connection(ours.detach())
        self.candidate: Candidate | None = None
        self.started = 0.0

    def send(self, candidate: Candidate, reproducer_dir: Path) -> None:
        self.candidate, self.started = candidate, time.monotonic()
        wire.send_message(self.conn, {"op": "grade", "candidate": asdict(candidate),
                                      "reproducer_dir": str(reproducer_dir)})

    def kill(self) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.conn.close()


def reproducer_dir_for(out: Path, candidate: Candidate) -> Path:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in candidate.name)[-80:]
    return out / "reproducers" / stem


# --------------------------------------------------------------------------------------------
# Reports


CSV_COLUMNS = ("candidate", "verdict", "check", "reason", "flags", "examples", "seconds", "gbps",
               "speedup_vs_reference", "speedup_vs_torch", "reproducer", "replay")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and os.replace: never half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _csv_row(record: dict) -> dict[str, object]:
    bench = record.get("bench") or {}
    return {
        "candidate": record["candidate"], "verdict": record["verdict"], "check": record.get("check") or "",
        "reason": record.get("reason", ""), "flags": ";".join(f["flag"] for f in record.get("flags", [])),
        "examples": "" if record.get("examples") is None else record["examples"], "seconds": record.get("seconds"),
        "gbps": bench.get("gbps", ""), "speedup_vs_reference": bench.get("speedup_vs_reference", ""),
        "speedup_vs_torch": bench.get("speedup_vs_torch", ""), "reproducer": record.get("reproducer") or "",
        "replay": record.get("replay") or "",
    }


def write_reports(out: Path, records: Iterable[dict]) -> None:
    records = sorted(records, key=lambda r: r["candidate"])
    atomic_write(out / REPORT_JSONL, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for record in records:
        writer.writerow(_csv_row(record))
    atomic_write(out / REPORT_CSV, buffer.getvalue())


def read_records(path: Path) -> list[dict]:
    """Records of an earlier report; unreadable lines are skipped (they will be graded again)."""
    records = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "candidate" in record and "verdict" in record:
            records.append(record)
    return records


def summary_counts(records: Iterable[dict]) -> dict[str, int]:
    counts = {v.value: 0 for v in Verdict}
    for record in records:
        counts[record["verdict"]] = counts.get(record["verdict"], 0) + 1
    return {k: v for k, v in counts.items() if v}


def render_table(records: list[dict], *, file=None) -> None:
    """The summary table (rich) of a grading run."""
    import re

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    stream = file or sys.stdout
    console = Console(file=stream, width=None if stream.isatty() else 200)
    table = Table(title="lse-fuzz grade", show_lines=False)
    for column in ("candidate", "verdict", "check"):
        table.add_column(column, no_wrap=True)
    table.add_column("flags", overflow="fold")
    for column in ("GB/s", "vs ref", "time"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("reason", overflow="ellipsis", no_wrap=True, max_width=60)
    styles = {"pass": "green", "fail": "red", "error": "red", "crash": "magenta", "timeout": "yellow",
              "load_error": "cyan", "internal_error": "bold red"}
    for record in sorted(records, key=lambda r: r["candidate"]):
        bench = record.get("bench") or {}
        flags = [f["flag"] for f in record.get("flags", [])]
        # The check has its own column, the candidate its row: keep the reason to what is left.
        reason = re.sub(r"^(check '\w+' failed: |target='[^']*': )", "", record.get("reason") or "")
        table.add_row(
            escape(record["candidate"]), f"[{styles.get(record['verdict'], '')}]{record['verdict']}[/]",
            record.get("check") or "", ", ".join(flags), str(bench.get("gbps", "")),
            str(bench.get("speedup_vs_reference", "")), f"{record.get('seconds', 0):.1f}s",
            escape(reason.replace(record["target"], record["candidate"])[:200]),
        )
    console.print(table)
    counts = summary_counts(records)
    console.print(f"{len(records)} candidates: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


def render_markdown(records: list[dict], *, title: str) -> str:
    """A Markdown summary (for a pull-request comment): verdicts, failures, replay commands."""
    lines = [f"### {title}", ""]
    counts = summary_counts(records)
    lines.append(", ".join(f"**{n}** {v}" for v, n in counts.items()) or "no candidates")
    lines += ["", "| candidate | verdict | check | flags | GB/s | reason |", "|---|---|---|---|---|---|"]
    for record in sorted(records, key=lambda r: r["candidate"]):
        bench = record.get("bench") or {}
        flags = ", ".join(f"`{f['flag']}`" for f in record.get("flags", []))
        reason = (record.get("reason") or "").replace("|", "\\|").replace("\n", " ")[:200]
        lines.append(f"| `{record['candidate']}` | **{record['verdict']}** | {record.get('check') or ''} | "
                     f"{flags} | {bench.get('gbps', '')} | {reason} |")
    for record in records:
        if record["verdict"] == Verdict.PASS.value or not (record.get("details") or record.get("replay")):
            continue
        lines += ["", f"<details><summary><code>{record['candidate']}</code>: {record['verdict']}</summary>", ""]
        if record.get("details"):
            lines += ["```text", record["details"].rstrip()[-6000:], "```"]
        if record.get("replay"):
            lines += ["", f"Replay: `{record['replay']}`"]
        lines += ["", "</details>"]
    options = records[0]["options"] if records else {}
    if options:
        lines += ["", f"<sub>seed {options.get('seed')} (id {options.get('seed_id')}), budget {options.get('budget')}, "
                      f"contract {options.get('contract')}, device {options.get('device')}</sub>"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# The batch


@dataclass
class GradeRun:
    records: list[dict]
    graded: int  # graded in this run (not resumed)
    resumed: int
    interrupted: bool


def grade(
    candidates: list[Candidate],
    options: GradeOptions,
    *,
    out: Path,
    jobs: int = 1,
    resume: bool = False,
    progress: Callable[[dict, int, int], None] | None = None,
) -> GradeRun:
    """Grade ``candidates`` with ``jobs`` drivers; reports under ``out`` after every candidate.

    Ctrl-C (or SIGTERM) stops the drivers and their workers and returns with ``interrupted``;
    the report then holds every candidate finished so far.
    """
    from .isolation import worker_environment, zygote_for

    out.mkdir(parents=True, exist_ok=True)
    key = options.key()
    kept: dict[str, dict] = {}  # by target: the same file and function, wherever the run started
    if resume:
        by_target = {c.target: c for c in candidates}
        for record in read_records(out / REPORT_JSONL):
            candidate = by_target.get(record.get("target"))
            if candidate is not None and record.get("key") == key and record.get("sha256") == candidate.sha256 \
                    and record["verdict"] != Verdict.INTERNAL_ERROR.value:
                kept[candidate.target] = dict(record, candidate=candidate.name)
    records = dict(kept)
    pending = deque(schedule(c for c in candidates if c.target not in kept))
    total = len(candidates)
    write_reports(out, records.values())
    baselines = None
    if options.bench and options.device.startswith("cuda") and pending:
        baselines = measure_baselines(options)
    jobs = max(1, min(jobs, len(pending))) if pending else 0
    lock_dir = str(out) if options.device.startswith("cuda") and jobs > 1 else None
    args = {"options": options.to_wire(), "baselines": baselines, "lock_dir": lock_dir}
    drivers: list[_Driver] = []
    graded = 0
    interrupted = False
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt) if pending else None
    try:
        if pending:
            zygote = zygote_for(worker_environment())
            drivers = [_Driver(zygote, out / "drivers.log", args) for _ in range(jobs)]
        idle = list(drivers)
        busy: dict[Connection, _Driver] = {}
        hard_limit = (options.timeout or DEFAULT_GRADE_TIMEOUT) + DRIVER_GRACE
        while pending or busy:
            while pending and idle:
                driver = idle.pop()
                candidate = pending.popleft()
                driver.send(candidate, reproducer_dir_for(out, candidate))
                busy[driver.conn] = driver
            for conn in wait(list(busy), timeout=1.0):
                driver = busy.pop(conn)
                try:
                    header, _ = wire.recv_message(conn)
                    record = header["record"]
                except (EOFError, OSError, ValueError, KeyError):
                    record = _driver_lost(driver, options, "the grading driver died")
                    driver.kill()
                    driver = _Driver(zygote, out / "drivers.log", args)
                    drivers.append(driver)
                records[record["target"]] = record
                graded += 1
                idle.append(driver)
                write_reports(out, records.values())
                if progress:
                    progress(record, len(records), total)
            now = time.monotonic()
            for conn, driver in list(busy.items()):
                if now - driver.started > hard_limit:
                    del busy[conn]
                    record = _driver_lost(driver, options, f"the grader stopped it after {hard_limit:g} s",
                                          verdict=Verdict.TIMEOUT)
                    driver.kill()
                    records[record["target"]] = record
                    graded += 1
                    drivers.append(_Driver(zygote, out / "drivers.log", args))
                    idle.append(drivers[-1])
                    write_reports(out, records.values())
                    if progress:
                        progress(record, len(records), total)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for driver in drivers:
            driver.kill()
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        write_reports(out, records.values())
    return GradeRun(records=sorted(records.values(), key=lambda r: r["candidate"]), graded=graded,
                    resumed=len(kept), interrupted=interrupted)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _driver_lost(driver: _Driver, options: GradeOptions, reason: str, *,
                 verdict: Verdict = Verdict.INTERNAL_ERROR) -> dict:
    assert driver.candidate is not None
    record = _base_record(driver.candidate, options)
    record.update(verdict=verdict.value, reason=reason, seconds=round(time.monotonic() - driver.started, 3))
    return record
