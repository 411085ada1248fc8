"""The runner: drives an implementation through the strategies and the checks.

``check(impl)`` lets Hypothesis generate examples until ``budget`` of them pass or one fails;
a failure is shrunk to a minimal counterexample (fewest rows and columns, mildest recipe,
contiguous float32 where the bug allows) and saved as a reproducer that ``replay`` (or
``python -m fuzz replay FILE --impl TARGET``) runs again. The same seed gives the same result.
"""

from __future__ import annotations

import contextlib
import enum
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from hypothesis import given, seed as hypothesis_seed, settings, strategies as st
from hypothesis.database import ExampleDatabase
from hypothesis import errors as hypothesis_errors

from reference.errors import InvalidArgument

from ._target import describe_target
from .checks import METAMORPHIC, CheckFailure, ImplError, Plan, run_checks, validate_checks
from .profiles import PROFILES, database_for, profile_settings
from .reproducer import load_reproducer, replay_command, save_reproducer
from .strategies import Contract, LseInput, default_device, lse_inputs

__all__ = ["CheckResult", "Status", "check", "replay", "status_of"]

DEFAULT_BUDGET = 200
# A failure that passed when Hypothesis ran the same example again (older versions: Flaky).
_NOT_REPRODUCED = getattr(hypothesis_errors, "FlakyFailure", hypothesis_errors.Flaky)
DEFAULT_REPRODUCER_DIR = Path(".lse-fuzz")


class Status(str, enum.Enum):
    PASSED = "passed"  # every example passed every selected check
    FAILED = "failed"  # a check failed; the failure reproduced on the shrunk example
    ERROR = "error"  # the implementation raised an exception
    FLAKY = "flaky"  # a check failed once but not when the same example ran again (stateful impl?)


def status_of(outcome: CheckFailure | ImplError | None, *, reproduced: bool = True) -> Status:
    """The one mapping from a raw outcome to a status."""
    if outcome is None:
        return Status.PASSED
    if not reproduced:
        return Status.FLAKY
    if isinstance(outcome, ImplError):
        return Status.ERROR
    assert isinstance(outcome, CheckFailure), f"unexpected outcome {outcome!r}"
    return Status.FAILED


@dataclass
class CheckResult:
    """What a run found. ``failure`` is a CheckFailure (FAILED, FLAKY) or an ImplError (ERROR)."""

    status: Status
    examples: int
    seconds: float
    target: str
    seed: int
    budget: int
    contract: Contract
    checks: tuple[str, ...]
    failure: CheckFailure | ImplError | None = None
    counterexample: LseInput | None = None
    plan: Plan | None = None
    reproducer: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def check(self) -> str | None:
        """The failing check's name (None when passed or when the implementation raised)."""
        return self.failure.check if isinstance(self.failure, CheckFailure) else None

    @property
    def error(self) -> str | None:
        """The implementation's traceback text when it raised."""
        return self.failure.text if isinstance(self.failure, ImplError) else None

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else math.inf

    def summary(self) -> str:
        pace = f"{self.examples} examples in {self.seconds:.1f} s ({self.examples_per_second:.1f}/s)"
        if self.passed:
            head = (f"PASSED {self.target}: {pace}; checks: {', '.join(self.checks)}; "
                    f"contract {self.contract.value}; seed {self.seed}")
            return head
        what = f"check {self.check!r}" if self.check else "the implementation raised"
        lines = [f"{self.status.name} {self.target}: {what} after {pace}; seed {self.seed}"]
        lines.extend(self.notes)
        if self.failure is not None:
            lines.append(self.failure.message())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        example = self.counterexample
        return {
            "status": self.status.value,
            "passed": self.passed,
            "check": self.check,
            "target": self.target,
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
            "examples_per_second": round(self.examples_per_second, 2) if self.seconds > 0 else None,
            "seed": self.seed,
            "budget": self.budget,
            "contract": self.contract.value,
            "checks": list(self.checks),
            "failure": None if self.failure is None else self.failure.to_dict(),
            "error": self.error,
            "counterexample": None if example is None else {
                "description": example.describe(),
                "shape": list(example.shape),
                "dtype": str(example.dtype).replace("torch.", ""),
                "layout": example.layout.to_dict(),
                "recipes": [str(spec) for spec in example.specs],
            },
            "plan": None if self.plan is None else self.plan.to_dict(),
            "reproducer": None if self.reproducer is None else str(self.reproducer),
            "notes": list(self.notes),
        }


class _Falsified(Exception):
    """Raised from one place for every failure, so Hypothesis shrinks them all as one bug."""

    def __init__(self, failure: CheckFailure | ImplError, example: LseInput, plan: Plan) -> None:
        super().__init__(str(failure))
        self.failure, self.example, self.plan = failure, example, plan


def _int_option(name: str, value: object, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise InvalidArgument(f"{name}={value!r}; expected an int >= {low}.")
    return value


def _device_option(device: torch.device | str | None) -> torch.device:
    if device is None:
        return default_device()
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise InvalidArgument(f"device={device!r}; expected 'cpu', 'cuda' or 'cuda:N'.") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise InvalidArgument(f"device={device!r}, but no CUDA device is available: use device='cpu'.")
    return resolved


def plans(checks: Iterable[str]) -> st.SearchStrategy[Plan]:
    """One metamorphic check per example (among those selected) and the seed of its transformation."""
    names = [name for name in checks if name in METAMORPHIC]
    metamorphic = st.sampled_from(names) if names else st.none()
    return st.builds(Plan, metamorphic=metamorphic, seed=st.integers(0, 2**32 - 1))


def check(
    impl: Callable,
    *,
    budget: int | None = None,
    seed: int = 0,
    device: torch.device | str | None = None,
    contract: Contract | str = Contract.STRICT,
    checks: Iterable[str] | None = None,
    profile: str | None = None,
    database: ExampleDatabase | Path | str | None = None,
    reproducer_dir: Path | str | None = None,
    max_elements: int | None = None,
    huge_offsets: bool = False,
    target: str | None = None,
) -> CheckResult:
    """Fuzz ``impl`` (any callable x -> Tensor) and return what was found.

    ``budget`` examples (default 200, or the profile's max_examples) are generated unless a check
    fails first; each costs about three calls of ``impl``. ``checks`` selects a subset of
    :data:`fuzz.checks.CHECKS`. ``contract='finite'`` leaves NaN and +inf out of the inputs.
    ``huge_offsets`` adds inputs with element offsets >= 2**31 (run those in an isolated process:
    a kernel with 32-bit indexing may crash it; each such example is first saved as
    ``reproducer_dir/lse-fuzz-pending-crash.pt`` and removed once it ran, so a crashed run leaves
    the input that crashed it). ``target`` is the TARGET string printed in the
    replay command (derived from ``impl`` when omitted). Failures are saved under
    ``reproducer_dir`` (default ``./.lse-fuzz``).
    """
    if not callable(impl):
        raise InvalidArgument(f"impl={impl!r} is not callable; pass a function x -> Tensor.")
    base = profile_settings(profile)
    budget = (PROFILES[profile] if profile else DEFAULT_BUDGET) if budget is None else budget
    budget = _int_option("budget", budget, 1)
    seed = _int_option("seed", seed, 0)
    device = _device_option(device)
    contract = Contract.parse(contract)
    names = validate_checks(checks)
    db = database_for(database)
    target = describe_target(impl) if target is None else target
    inputs = lse_inputs(contract=contract, device=device, max_elements=max_elements, huge_offsets=huge_offsets)
    state = _RunState()

    @settings(base, max_examples=budget, database=db)
    @hypothesis_seed(seed)
    @given(example=inputs, plan=plans(names))
    def run_one(example: LseInput, plan: Plan) -> None:
        state.examples += 1
        failure = None
        # A kernel with 32-bit index math may crash the process on a huge-offset input; the
        # example is saved first so that whoever ran this process finds what crashed it.
        pending = _save_pending(example, plan, names, contract, reproducer_dir) if example.layout.is_huge else None
        try:
            run_checks(impl, example, checks=names, plan=plan)
        except (CheckFailure, ImplError) as exc:
            failure = exc
        if pending is not None:
            pending.unlink(missing_ok=True)
        if failure is not None:  # raised outside the except block: no __context__, one origin
            state.last = _Falsified(failure, example, plan)
            raise state.last

    # Failures saved in a database belong to this implementation and selection only.
    run_one.hypothesis.inner_test._hypothesis_internal_add_digest = repr((target, contract.value, names)).encode()

    started = time.perf_counter()
    falsified, reproduced = None, True
    try:
        with _one_cpu_thread(device):
            run_one()
    except _Falsified as exc:
        falsified = exc
    except _NOT_REPRODUCED:
        if state.last is None:
            raise
        falsified, reproduced = state.last, False
    seconds = time.perf_counter() - started

    result = CheckResult(
        status=status_of(None if falsified is None else falsified.failure, reproduced=reproduced),
        examples=state.examples, seconds=seconds, target=target, seed=seed, budget=budget,
        contract=contract, checks=names,
    )
    if falsified is not None:
        _record_failure(result, falsified, reproducer_dir)
        if not reproduced:
            result.notes.append("the failure did not reproduce when the same example ran again: "
                                "the implementation keeps state between calls or is nondeterministic")
    return result


@contextlib.contextmanager
def _one_cpu_thread(device: torch.device):
    """Run torch's CPU ops on one thread while fuzzing, then restore the caller's setting.

    Examples hold at most ~65k elements: splitting such ops across threads costs more than it
    saves, and on a busy machine (pytest -n auto, a second run) the threads spin against each
    other and a run gets several times slower.
    """
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@dataclass
class _RunState:
    examples: int = 0
    last: _Falsified | None = None


PENDING_NAME = "lse-fuzz-pending-crash.pt"


def _save_pending(example: LseInput, plan: Plan, names, contract: Contract, reproducer_dir) -> Path:
    directory = DEFAULT_REPRODUCER_DIR if reproducer_dir is None else Path(reproducer_dir)
    path = save_reproducer(directory, example, plan, checks=names, contract=contract, check=None,
                           message="the process running this example ended before it finished")
    return path.replace(directory / PENDING_NAME)


def _record_failure(result: CheckResult, falsified: _Falsified, reproducer_dir: Path | str | None) -> None:
    failure = falsified.failure
    result.failure, result.counterexample, result.plan = failure, falsified.example, falsified.plan
    directory = DEFAULT_REPRODUCER_DIR if reproducer_dir is None else Path(reproducer_dir)
    path = save_reproducer(
        directory, falsified.example, falsified.plan, checks=result.checks, contract=result.contract,
        check=result.check, message=failure.message(),
    )
    result.reproducer = path
    failure.replay = replay_command(path, result.target)


def replay(
    path: Path | str,
    impl: Callable,
    *,
    device: torch.device | str | None = None,
    target: str | None = None,
) -> CheckResult:
    """Run the example saved at ``path`` once more through the checks that failed on it."""
    if not callable(impl):
        raise InvalidArgument(f"impl={impl!r} is not callable; pass a function x -> Tensor.")
    saved = load_reproducer(path)
    device = _device_option(device if device is not None else ("cuda" if saved.meta.get("device", "").startswith("cuda")
                                                                 and torch.cuda.is_available() else "cpu"))
    example = saved.example(device)
    target = describe_target(impl) if target is None else target
    started = time.perf_counter()
    failure = None
    try:
        run_checks(impl, example, checks=saved.checks, plan=saved.plan)
    except (CheckFailure, ImplError) as exc:
        failure = exc
    result = CheckResult(
        status=status_of(failure), examples=1, seconds=time.perf_counter() - started, target=target,
        seed=saved.seed, budget=1, contract=saved.contract, checks=saved.checks, failure=failure,
        counterexample=example, plan=saved.plan, reproducer=Path(path),
    )
    if failure is not None:
        failure.replay = replay_command(path, target)
    return result
