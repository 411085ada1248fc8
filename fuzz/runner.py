"""The runner: drives an implementation through the strategies and the checks.

``check(impl)`` lets Hypothesis generate examples until ``budget`` of them pass or one fails;
a failure is shrunk to a minimal counterexample (fewest rows and columns, mildest recipe,
contiguous float32 where the bug allows) and saved as a reproducer that ``replay`` (or
``python -m fuzz replay FILE --impl TARGET``) runs again. The same seed gives the same result.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from hypothesis import errors as hypothesis_errors
from hypothesis import given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase

from reference.errors import InvalidArgument

from . import autotune, bfloat16_interpreter, defaults, interpreter_frontend, interpreter_numpy, validate
from .calls import CallConvention, ConventionError
from .checks import GRADIENT_CHECKS, METAMORPHIC, Plan, run_checks, validate_checks
from .checks.context import Pin
from .failures import CheckFailure, ImplError, headline
from .gpu_memory import HugeInputSlots, sparse_huge_inputs, with_memory_retry
from .gradient import gradient_of
from .outcomes import HarnessError, ImplLost, run_status
from .profiles import PROFILES, database_for, profile_settings
from .reproducer import load_reproducer, replay_command, save_reproducer
from .result import CheckResult
from .strategies import Contract, LseInput, lse_inputs
from .target import describe_target
from .timing import SlowCall

__all__ = ["CheckResult", "check", "replay"]

DEFAULT_BUDGET = defaults.CHECK_BUDGET
# A failure that passed when Hypothesis ran the same example again (older versions: Flaky).
_NOT_REPRODUCED = getattr(hypothesis_errors, "FlakyFailure", hypothesis_errors.Flaky)
DEFAULT_REPRODUCER_DIR = Path(defaults.REPRODUCER_DIR)


def _detached(exc: BaseException) -> BaseException:
    """The failure without its traceback and chained exceptions: their frames hold the example's
    tensors (and the transformed copies a check made), and Hypothesis keeps every failure it
    meets while shrinking. On a GPU a huge-offset example is gigabytes, so a kept frame is an
    out-of-memory error for the next example. The report needs only the failure's own fields
    (an :class:`ImplError` has its traceback as text already)."""
    exc.__traceback__ = None
    exc.__context__ = None
    exc.__cause__ = None
    return exc


class _HarnessStop(BaseException):
    """Carries a :class:`HarnessError` through Hypothesis, which would otherwise shrink it as a bug
    of the implementation (more huge examples on a full GPU): a BaseException ends the run now.
    A :class:`~fuzz.calls.ConventionError` (the result has another structure than declared) too:
    bad input, raised to the caller as it is."""

    def __init__(self, error: HarnessError | ConventionError) -> None:
        super().__init__(str(error))
        self.error = error


class _Falsified(Exception):
    """Raised from one place for every failure, so Hypothesis shrinks them all as one bug."""

    def __init__(self, failure: CheckFailure | ImplError, example: LseInput, plan: Plan) -> None:
        super().__init__(str(failure))
        self.failure, self.example, self.plan = failure, example, plan


def plans(checks: Iterable[str], configs: int = 1) -> st.SearchStrategy[Plan]:
    """One metamorphic check per example (among those selected), the seed of its transformation,
    and, when the implementation has ``configs`` > 1 autotune configurations, the one every call of
    the example pins (drawn per example, not per call: two configs may round differently, and
    the determinism check compares two calls). Nothing is drawn for an untuned implementation, so
    its examples do not change."""
    names = [name for name in checks if name in METAMORPHIC]
    metamorphic = st.sampled_from(names) if names else st.none()
    config = st.integers(0, configs - 1) if configs > 1 else st.none()
    return st.builds(Plan, metamorphic=metamorphic, seed=st.integers(0, 2**32 - 1), config=config)


@dataclass(frozen=True)
class _Tuning:
    """The implementation's autotuned kernels: how to pin one configuration, how many there are."""

    pin: Pin | None = None
    combinations: int = 1
    description: tuple[str, ...] = ()


def _tuning(impl: Callable) -> _Tuning:
    """An isolated implementation reports its worker's kernels; an in-process one is searched here."""
    if hasattr(impl, "tuning"):
        combinations, description = impl.tuning()
        return _Tuning(impl.pinned, combinations, tuple(description)) if combinations else _Tuning()
    tuners = autotune.discover(impl)
    if not tuners:
        return _Tuning()
    return _Tuning(lambda choice: autotune.pinned(tuners, choice), autotune.combinations(tuners),
                   tuple(autotune.describe(tuners)))


def _interpreter_semantics(device: torch.device) -> None:
    """An in-process implementation on the CPU runs in Triton's interpreter: its bfloat16 arithmetic
    is computed on the values, and a kernel Triton's compiler refuses is refused, as on a GPU
    (fuzz.bfloat16_interpreter, fuzz.interpreter_frontend; a worker does it itself)."""
    if device.type == "cpu":
        bfloat16_interpreter.install()
        interpreter_numpy.install()
        interpreter_frontend.install()


def check(
    impl: Callable,
    *,
    budget: int | None = None,
    seed: int = 0,
    device: torch.device | str | None = None,
    contract: Contract | str = Contract.STRICT,
    dtypes: Iterable[str] | str | None = None,
    layouts: str | None = None,
    output_dtype: str | None = None,
    max_n: int | None = None,
    call: CallConvention | dict | None = None,
    checks: Iterable[str] | None = None,
    profile: str | None = None,
    database: ExampleDatabase | Path | str | None = None,
    reproducer_dir: Path | str | None = None,
    max_elements: int | None = None,
    max_rows: int | None = None,
    huge_offsets: bool = True,
    time_limit: float | None = None,
    target: str | None = None,
    backward: bool = False,
) -> CheckResult:
    """Fuzz ``impl`` (any callable x -> Tensor; see ``contract.call`` for others) and return what was found.

    ``budget`` examples (default 200, or the profile's max_examples) are generated unless a check
    fails first; each costs about three calls of ``impl``. ``checks`` selects a subset of
    :data:`fuzz.checks.CHECKS`. ``contract`` is what the implementation declares it supports (a
    :class:`fuzz.contract.Contract`, or "strict"/"finite" for its values policy); ``dtypes``,
    ``layouts``, ``output_dtype`` and ``max_n`` set those fields of it. Only inputs inside the
    contract are generated, and the output must have the declared dtype. ``call`` sets how ``impl``
    is called (:mod:`fuzz.calls`: N-D input, dim, keepdim, the LSE's place). ``max_elements`` and
    ``max_rows`` cap M * N and M (defaults: :func:`fuzz.strategies.default_max_elements` and
    :func:`~fuzz.strategies.default_max_rows`). ``huge_offsets`` (on by default) adds inputs with
    element offsets >= 2**31: a kernel with 32-bit indexing may crash the process on them, so each
    such example is first saved as ``reproducer_dir/lse-fuzz-pending-crash-PID.pt`` and removed once it
    ran (a crashed run leaves the input that crashed it); run untrusted implementations isolated
    (``lse-fuzz check``, :class:`fuzz.isolation.IsolatedImpl`). A call far slower than
    ``reference.lse`` on the same input is a finding in ``result.slow`` (see :mod:`fuzz.timing`);
    with ``time_limit`` (seconds) a call slower than that fails the example instead (check
    ``time_limit``). ``target`` is the TARGET string printed in the
    replay command (derived from ``impl`` when omitted). Failures are saved under
    ``reproducer_dir`` (default ``./.lse-fuzz``). ``backward`` (or a gradient check named in
    ``checks``) also judges the gradient (:mod:`fuzz.gradient`, :data:`fuzz.checks.GRADIENT_CHECKS`).
    """
    if not callable(impl):
        raise InvalidArgument(f"impl={impl!r} is not callable; pass a function x -> Tensor.")
    base = profile_settings(profile)
    budget = (PROFILES[profile] if profile else DEFAULT_BUDGET) if budget is None else budget
    budget = validate.integer(budget, name="budget", low=1)
    seed = validate.integer(seed, name="seed", low=0)
    device = validate.device(device)
    time_limit = validate.seconds(time_limit, name="time_limit", optional=True)
    contract = Contract.parse(contract).with_options(dtypes=dtypes, layouts=layouts, output_dtype=output_dtype,
                                                     max_n=max_n, call=call)
    names = validate_checks(checks)
    backward = backward or any(name in GRADIENT_CHECKS for name in names)
    names = (*names, *GRADIENT_CHECKS) if backward and checks is None else names
    db = database_for(database)
    _interpreter_semantics(device)
    # Dense huge inputs take a slot each; sparse ones are megabytes and need none.
    dense = device.type == "cuda" and huge_offsets and not sparse_huge_inputs(device)
    run = _Run(impl, names, contract, describe_target(impl) if target is None else target, reproducer_dir,
               time_limit, _tuning(impl), _gradient(impl, contract) if backward else None,
               HugeInputSlots(device) if dense else None)
    inputs = lse_inputs(contract=contract, device=device, max_elements=max_elements, max_rows=max_rows,
                        huge_offsets=huge_offsets)

    @settings(base, max_examples=budget, database=db)
    @hypothesis_seed(seed)
    @given(example=inputs, plan=plans(names, run.tuning.combinations))
    def test(example: LseInput, plan: Plan) -> None:
        run.one(example, plan)

    # Failures saved in a database belong to this implementation and selection only.
    test.hypothesis.inner_test._hypothesis_internal_add_digest = repr((run.target, contract.to_dict(),
                                                                       names)).encode()
    return run.result(test, device, seed, budget)


@dataclass
class _RunState:
    examples: int = 0
    last: _Falsified | None = None
    slow: dict[tuple, SlowCall] = field(default_factory=dict)  # one per kind of input (shrinking repeats them)

    def note_slow(self, call: SlowCall) -> None:
        key = (call.call, call.shape, call.dtype, call.layout)
        if key not in self.slow or self.slow[key].seconds < call.seconds:
            self.slow[key] = call


@dataclass
class _Run:
    """One fuzzing run: what every example shares; :meth:`one` is the body of the Hypothesis test."""

    impl: Callable
    names: tuple[str, ...]
    contract: Contract
    target: str
    reproducer_dir: Path | str | None
    time_limit: float | None
    tuning: _Tuning
    gradient: Callable | None  # the gradient's implementation, when the backward is judged
    slots: HugeInputSlots | None  # one per dense huge input on a GPU
    state: _RunState = field(default_factory=_RunState)

    def one(self, example: LseInput, plan: Plan) -> None:
        self.state.examples += 1
        on_gpu = example.layout.is_huge and example.device.type == "cuda"
        dense = on_gpu and self.slots is not None
        with self.slots.hold() if dense else contextlib.nullcontext():
            try:
                if on_gpu:
                    _materialize(example)
                self._example(example, plan)
            except (HarnessError, ConventionError) as exc:
                raise _HarnessStop(exc) from None
            finally:
                if on_gpu:
                    example.release()
                if dense:
                    # Gigabytes of device memory, in this process and the implementation's worker:
                    # given back before the slot, so the next holder finds them free (a launch
                    # leaves reference cycles holding its arguments: collect them first).
                    getattr(self.impl, "release_input", lambda: None)()
                    gc.collect()
                    torch.cuda.empty_cache()

    def _example(self, example: LseInput, plan: Plan) -> None:
        failure = None
        # A kernel with 32-bit index math may crash the process on a huge-offset input; the
        # example is saved first so that whoever ran this process finds what crashed it (the file
        # outlives only a process that died).
        pending = (_save_pending(example, plan, self.names, self.contract, self.reproducer_dir)
                   if example.layout.is_huge else None)
        try:
            run_checks(self.impl, example, checks=self.names, plan=plan, contract=self.contract,
                       time_limit=self.time_limit, on_slow=self.state.note_slow, pin=self.tuning.pin,
                       gradient_impl=self.gradient)
        except (CheckFailure, ImplError) as exc:
            failure = _detached(exc)
        except torch.OutOfMemoryError as exc:
            # The implementation's own errors arrive as ImplError: this one is a copy the checks
            # made (a metamorphic transformation of a huge input) on a GPU other processes filled.
            raise HarnessError(f"the GPU ran out of memory for the fuzzer's own copy of {example.describe()}: "
                               f"{str(exc).splitlines()[0]} Run fewer jobs at once, or pass "
                               "--no-huge-offsets.") from None
        except ImplLost as lost:
            # An isolated implementation's worker is gone (crash, exit, hang): keep the example it
            # was lost on, replayable like any failure, then stop the run (no shrinking).
            _record_lost(lost, example, plan, self.names, self.contract, self.target, self.reproducer_dir)
            raise
        except (HarnessError, ConventionError, hypothesis_errors.HypothesisException):
            raise
        except Exception as exc:
            # The checks' own code failed (the oracle; timing a slow call against reference.lse, which
            # a process compiling Triton for CUDA cannot run on a CPU input): no verdict on the
            # implementation, and nothing to shrink: a replay that misses it (the call is fast
            # then) would end the run as 'flaky', an exception group with no failure in it.
            raise HarnessError(f"the fuzzer's own checks failed on {example.describe()}, not the "
                               f"implementation: {headline(exc)}") from exc
        finally:
            if pending is not None:
                pending.unlink(missing_ok=True)
        if failure is not None:  # raised outside the except block: no __context__, one origin
            self.state.last = _Falsified(failure, example, plan)
            raise self.state.last

    def result(self, test: Callable[[], None], device: torch.device, seed: int, budget: int) -> CheckResult:
        """Run ``test`` (:meth:`one` under Hypothesis) and say what it found."""
        started = time.perf_counter()
        try:
            with _one_cpu_thread(device):
                falsified, reproduced = _outcome(test, self.state)
        finally:
            getattr(self.gradient, "close", lambda: None)()  # an isolated implementation's gradient worker
        result = CheckResult(
            status=run_status(None if falsified is None else falsified.failure, reproduced=reproduced),
            examples=self.state.examples, seconds=time.perf_counter() - started, target=self.target, seed=seed,
            budget=budget, contract=self.contract, checks=self.names, slow=list(self.state.slow.values()),
            tuning=list(self.tuning.description), compiles=list(getattr(self.impl, "compiles", None) or []),
        )
        if falsified is not None:
            _record_failure(result, falsified, self.reproducer_dir)
            if not reproduced:
                result.notes.append("the failure did not reproduce when the same example ran again: "
                                    "the implementation keeps state between calls or is nondeterministic")
        return result


def _materialize(example: LseInput) -> None:
    """Allocate a huge-offset input on the GPU (waiting for room other processes hold)."""
    try:
        with_memory_retry(lambda: example.x, example.device)
    except torch.OutOfMemoryError as exc:
        raise HarnessError(f"the GPU had no room for a huge-offset input ({example.describe()}) even "
                           f"after waiting: {str(exc).splitlines()[0]} Run fewer jobs at once, or pass "
                           "--no-huge-offsets.") from None


def _outcome(run_one: Callable[[], None], state: _RunState) -> tuple[_Falsified | None, bool]:
    """Run the Hypothesis test: (the failure found, whether it reproduced). What ends a run with no
    verdict on the implementation is raised: a lost worker (ImplLost) as it is; a failure of the
    harness or of Hypothesis as a HarnessError naming its cause in one line, never an exception group."""
    try:
        run_one()
    except _Falsified as exc:
        return exc, True
    except _HarnessStop as stop:
        raise stop.error from stop.error.__cause__
    except _NOT_REPRODUCED as flaky:
        if state.last is None:  # what did not reproduce was no failure of the implementation
            raise HarnessError(f"the fuzzer's Hypothesis run raised {headline(flaky)}") from flaky
        return state.last, False
    except Exception as exc:  # Hypothesis' own (FlakyStrategyDefinition), or what it re-raised as fatal
        raise HarnessError(f"the fuzzer's Hypothesis run raised {headline(exc)}") from exc
    return None, True


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


def _gradient(impl: Callable, contract: Contract) -> Callable:
    """``x -> dx`` for the gradient checks: an isolated implementation's twin worker, else
    :func:`~fuzz.gradient.gradient_of` the implementation itself."""
    if not contract.call.is_default:
        raise InvalidArgument("--backward judges the gradient of the 2-D lse(x): drop the call convention's "
                              "options (--ndim, --dim, --keepdim, --call-args, --result) or --backward.")
    twin = getattr(impl, "gradient", None)
    return twin() if callable(twin) else gradient_of(impl)


def _save_pending(example: LseInput, plan: Plan, names, contract: Contract, reproducer_dir) -> Path:
    # One name per process: parallel runs sharing a directory (a mutation gate runs the reference
    # and the mutants' base side by side, on the same examples) never touch each other's file.
    directory = DEFAULT_REPRODUCER_DIR if reproducer_dir is None else Path(reproducer_dir)
    return save_reproducer(directory, example, plan, checks=names, contract=contract, check=None,
                           message="the process running this example ended before it finished",
                           name=f"lse-fuzz-pending-crash-{os.getpid()}.pt")


def _record_lost(lost: ImplLost, example: LseInput, plan: Plan, names, contract: Contract, target: str,
                 reproducer_dir) -> None:
    directory = DEFAULT_REPRODUCER_DIR if reproducer_dir is None else Path(reproducer_dir)
    path = save_reproducer(directory, example, plan, checks=names, contract=contract, check=None,
                           message=f"the worker was lost during call {lost.call}: {lost}", lost=lost.outcome.value)
    lost.example, lost.reproducer = example, path
    lost.replay = replay_command(path, target, isolate=True, call=contract.call)


def _pristine(example: LseInput) -> LseInput:
    # The input as generated, not as the candidate left it: a kernel that writes into its input
    # (input_unchanged) must not hand its caller a scribbled counterexample. The view is rebuilt
    # from the untouched CPU values when it is first used.
    return LseInput(values=example.values, layout=example.layout, specs=example.specs, seed=example.seed,
                    device=example.device, batch=example.batch)


def _record_failure(result: CheckResult, falsified: _Falsified, reproducer_dir: Path | str | None) -> None:
    failure = falsified.failure
    result.failure, result.counterexample, result.plan = failure, _pristine(falsified.example), falsified.plan
    directory = DEFAULT_REPRODUCER_DIR if reproducer_dir is None else Path(reproducer_dir)
    path = save_reproducer(
        directory, falsified.example, falsified.plan, checks=result.checks, contract=result.contract,
        check=result.check, message=failure.message(),
    )
    result.reproducer = path
    failure.replay = replay_command(path, result.target, call=result.contract.call)


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
    if device is None:
        device = "cuda" if saved.meta.get("device", "").startswith("cuda") and torch.cuda.is_available() else "cpu"
    device = validate.device(device)
    _interpreter_semantics(device)
    example = saved.example(device)
    target = describe_target(impl) if target is None else target
    started = time.perf_counter()
    failure = None
    gradient = _gradient(impl, saved.contract) if any(name in GRADIENT_CHECKS for name in saved.checks) else None
    try:
        run_checks(impl, example, checks=saved.checks, plan=saved.plan, contract=saved.contract,
                   pin=_tuning(impl).pin, gradient_impl=gradient)
    except (CheckFailure, ImplError) as exc:
        failure = exc
    finally:
        getattr(gradient, "close", lambda: None)()
    result = CheckResult(
        status=run_status(failure), examples=1, seconds=time.perf_counter() - started, target=target,
        seed=saved.seed, budget=1, contract=saved.contract, checks=saved.checks, failure=failure,
        counterexample=_pristine(example), plan=saved.plan, reproducer=Path(path),
    )
    if failure is not None:
        failure.replay = replay_command(path, target, call=saved.contract.call)
    return result
