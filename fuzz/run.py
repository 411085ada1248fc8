"""One fuzzing run under Hypothesis: the body of its test (:class:`Run`), its phases and what it found.

:func:`fuzz.runner.check` builds a :class:`Run` and its Hypothesis tests; :meth:`Run.one` is the
test's body (one example through the checks), :meth:`Run.result` runs the tests (the generation,
the shrinking in its phases, see :mod:`fuzz.shrinking`, then the last example) and says what they
found, with the failure saved as a reproducer and the run's :class:`~fuzz.costs.Costs`.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from hypothesis import errors as hypothesis_errors, reject

from . import defaults
from .interpreter import specialization
from .calls import ConventionError
from .checks import METAMORPHIC, Plan, run_checks
from .checks.context import Pin
from .costs import Costs
from .failures import CheckFailure, ImplError, Unsupported, headline
from .gpu_memory import HugeInputSlots, out_of_memory, with_memory_retry
from .outcomes import HarnessError, ImplLost, run_status
from .reproducer import replay_command, save_reproducer
from .result import CheckResult
from .shares import ShareSplit
from .shrinking import ShrinkClock, ShrinkStore, final_run, launch_class, same_example, shrink_limit
from .stream import own_stream
from .strategies import Contract, LseInput
from .timing import SlowCall

__all__ = ["PREFER_COMPILED", "Run", "RunStop", "Tuning", "pristine"]

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


class _Refused(BaseException):
    """The CPU's emulation cannot run a construct the implementation used (:class:`Unsupported`), met
    before any failure: the run ends now, ``unsupported`` (a BaseException, so Hypothesis does not
    shrink it). ``found`` is the refusal with the example it happened on."""

    def __init__(self, found: _Falsified) -> None:
        super().__init__(str(found.failure))
        self.found = found


class _Stopped(BaseException):
    """Another part of the run failed (see :class:`RunStop`): this part ends now, its verdict
    cannot change the run's."""


class RunStop:
    """How the parts of one run stop each other: a part that fails says so (:meth:`failed`), and
    a part that has not failed ends at its next example once another has (:meth:`others_failed`).
    Any object with these two methods will do (:class:`fuzz.grading.parts.PartSignal` is the one
    ``lse-fuzz check`` uses across processes); its ``why``, if it has one, says in the result's notes
    what ended the run (:class:`fuzz.grading.memory_phase.MemoryStop`: a stray access found beside it)."""

    def failed(self) -> None:  # pragma: no cover - the protocol
        raise NotImplementedError

    def others_failed(self) -> bool:  # pragma: no cover - the protocol
        raise NotImplementedError


PREFER_COMPILED = {"cpu": False, "cuda": True}
"""Whether shrinking first stays within the launch classes a run already compiled
(:mod:`fuzz.shrinking`), per device type: a compile costs seconds on a GPU, nothing on the CPU."""


class _Falsified(Exception):
    """Raised from one place for every failure, so Hypothesis shrinks them all as one bug."""

    def __init__(self, failure: CheckFailure | ImplError | Unsupported, example: LseInput, plan: Plan) -> None:
        super().__init__(str(failure))
        self.failure, self.example, self.plan = failure, example, plan


@dataclass(frozen=True)
class Tuning:
    """The implementation's autotuned kernels: how to pin one configuration, how many there are."""

    pin: Pin | None = None
    combinations: int = 1
    description: tuple[str, ...] = ()


@dataclass
class _RunState:
    examples: int = 0
    last: _Falsified | None = None
    slow: dict[tuple, SlowCall] = field(default_factory=dict)  # one per kind of input (shrinking repeats them)
    costs: Costs = field(default_factory=Costs)  # calls and their seconds (the checks' Context adds them)
    body_seconds: float = 0.0  # in examples' bodies: calls, compiles, the oracle and the checks
    stopped: bool = False  # another part failed first (RunStop)
    failing: list = field(default_factory=list)  # the last few failing (example, plan): Hypothesis replays them
    largest: dict | None = None  # the largest 2-D input drawn (CheckResult.largest)

    def saw(self, example: LseInput) -> None:
        """Keep the largest 2-D input drawn, for the GPU's memory phase to replay (a huge view is
        probed on its own there; a shrink step is no drawn input)."""
        rows, cols = example.shape
        if example.batch is None and not example.layout.is_huge and \
                rows * cols > (0 if self.largest is None else math.prod(self.largest["shape"])):
            self.largest = {"shape": [rows, cols], "dtype": str(example.dtype).replace("torch.", ""),
                            "layout": example.layout.to_dict(), "description": example.describe()}

    def failed(self, falsified: _Falsified) -> None:
        self.last = falsified
        self.failing = [*self.failing[-7:], (falsified.example, falsified.plan)]

    def replays(self, example: LseInput, plan: Plan) -> bool:
        """Whether ``example`` with ``plan`` failed before in this run (Hypothesis runs it again)."""
        return any(p == plan and same_example(e, example) for e, p in self.failing)

    def note_slow(self, call: SlowCall) -> None:
        key = (call.call, call.shape, call.dtype, call.layout)
        if key not in self.slow or self.slow[key].seconds < call.seconds:
            self.slow[key] = call


@dataclass
class Run:
    """One fuzzing run: what every example shares; :meth:`one` is the body of the Hypothesis test."""

    impl: Callable
    names: tuple[str, ...]
    contract: Contract
    target: str
    reproducer_dir: Path | str | None
    time_limit: float | None
    tuning: Tuning
    gradient: Callable | None  # the gradient's implementation, when the backward is judged
    slots: HugeInputSlots | None  # one per dense huge input on a GPU
    stop: RunStop | None = None
    shrink: ShrinkClock = field(default_factory=lambda: ShrinkClock(None))
    prefer_compiled: bool = False  # shrink within the compiled launch classes first (fuzz.shrinking)
    restricted: bool = False  # in that first phase now
    last_examples: tuple[tuple[LseInput, str | None], ...] = ()  # (example, its check): runner._last_examples
    share: tuple[int, int] | None = None  # (k, K): run the drawn examples of launch classes of share k only
    split: ShareSplit | None = None  # which share runs which launch classes (fuzz.shares), with ``share``
    state: _RunState = field(default_factory=_RunState)

    def skips(self, example: LseInput) -> bool:
        """Whether ``example`` is another share's (``share``): skipped as if it passed. A share is a
        set of launch classes (:mod:`fuzz.shares`), so the shares compile apart. Hypothesis draws
        the same examples whatever a passing body did (no target(), no event()), so the shares of
        one stream are disjoint and together the whole. Shrinking skips nothing."""
        if self.share is None or self.shrink.shrinking:
            return False
        return self.split.owner(launch_class(example)) != self.share[0]

    def one(self, example: LseInput, plan: Plan) -> None:
        clock = self.shrink
        # Hypothesis runs a failing example again (to confirm it, and its final run of the smallest
        # one) and calls a different outcome flaky: such a replay is never skipped, or a shrink that
        # ran out of time would turn the failure it stopped at into "did not reproduce".
        if clock.shrinking:
            if not final_run():
                clock.steps += 1
                if not self.state.replays(example, plan):
                    if clock.out_of_time():
                        reject()  # Hypothesis stops at its own limit after this candidate: no call for it
                    if self.restricted and launch_class(example) not in clock.classes:
                        clock.deferred += 1
                        reject()
        elif self.stop is not None and self.stop.others_failed():
            self.state.stopped = True
            raise _Stopped
        example.build()  # a drawn example's tensors: generation, not the body's seconds
        started = time.perf_counter()
        try:
            self._held(example, plan)
        finally:
            self.state.body_seconds += time.perf_counter() - started
            clock.classes.add(launch_class(example))

    def _held(self, example: LseInput, plan: Plan) -> None:
        self.state.examples += 1
        if not self.shrink.shrinking:
            self.state.saw(example)
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
                       gradient_impl=self.gradient, costs=self.state.costs)
        except (CheckFailure, ImplError) as exc:
            failure = _detached(exc)
        except Unsupported as refusal:
            # The CPU cannot run this example as a GPU would. Before any failure the run ends here,
            # unsupported: no verdict is possible on this device, and the rest of the run would mostly
            # meet the construct again (a kernel uses it at every launch). Once a failure was found,
            # the failure wins: every example that ran to its end ran faithfully (the emulator refuses,
            # it never approximates), so the failure is the kernel's; this example is no instance of
            # it, and shrinking goes on without it.
            if self.state.last is not None:
                reject()
            raise _Refused(_Falsified(_detached(refusal), example, plan)) from None
        except ImplLost as lost:
            # An isolated implementation's worker is gone (crash, exit, hang): keep the example it
            # was lost on, replayable like any failure, then stop the run (no shrinking).
            self._failed()
            _record_lost(lost, example, plan, self.names, self.contract, self.target, self.reproducer_dir)
            raise
        except (HarnessError, ConventionError, hypothesis_errors.HypothesisException):
            raise
        except Exception as exc:
            if out_of_memory(exc):  # the allocator's error or the runtime's "CUDA error: out of memory"
                # The implementation's own errors arrive as ImplError: this one is a copy the checks
                # made (a metamorphic transformation of a huge input) on a GPU other processes filled.
                raise HarnessError(f"the GPU ran out of memory for the fuzzer's own checks on {example.describe()}: "
                                   f"{str(exc).splitlines()[0]} Run fewer jobs at once, or pass "
                                   "--no-huge-offsets.") from None
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
            self._failed()
            self.state.failed(_Falsified(failure, example, plan))
            raise self.state.last

    def _failed(self) -> None:
        """The first failure: shrinking starts (its clock too), and the other parts may stop."""
        if not self.shrink.shrinking:
            self.shrink.start()
            self.shrink.launched_before = _Counts.of(self.impl).new_specializations
            self.restricted = self.prefer_compiled
            if self.stop is not None:
                self.stop.failed()

    def result(self, tests: list[Callable[[], None]], device: torch.device, seed: int, budget: int,
               store: ShrinkStore) -> CheckResult:
        """Run the Hypothesis tests (:meth:`one` under each phase's settings, see :mod:`fuzz.shrinking`)
        and say what they found."""
        started = time.perf_counter()
        before = _Counts.of(self.impl)
        with specialization.counting() as launched_here, own_stream():  # one seed, one stream (fuzz.stream)
            falsified, reproduced = self._phases(tests, device, store)
            here = launched_here()
        seconds = time.perf_counter() - started
        result = CheckResult(
            status=run_status(None if falsified is None else falsified.failure, reproduced=reproduced),
            examples=self.state.examples, seconds=seconds, target=self.target, seed=seed,
            budget=budget, contract=self.contract, checks=self.names, slow=list(self.state.slow.values()),
            tuning=list(self.tuning.description), compiles=list(getattr(self.impl, "compiles", None) or []),
            costs=self._costs(before, seconds, here), largest=self.state.largest,
        )
        if self.state.stopped:
            result.notes.append(f"stopped: {getattr(self.stop, 'why', '') or 'another part of the run failed first'}")
        if falsified is not None:
            _record_failure(result, falsified, self.reproducer_dir)
            if isinstance(falsified.failure, Unsupported):
                first = self.state.examples
                result.notes.append(f"the run stopped at example {first}, the first that used "
                                    f"{falsified.failure.construct}" + (": the examples before it passed" if first > 1 else ""))
            if not reproduced:
                result.notes.append("the failure did not reproduce when the same example ran again: "
                                    "the implementation keeps state between calls or is nondeterministic")
            if result.costs.shrink_stopped:
                result.notes.append(f"shrinking stopped after its budget of {self.shrink.budget:g} s "
                                    "(--shrink-seconds): this is the smallest failing input found by then")
        return result

    def _phases(self, tests: list[Callable[[], None]], device: torch.device,
                store: ShrinkStore) -> tuple[_Falsified | None, bool]:
        """The Hypothesis runs (a second to shrink anywhere, see :mod:`fuzz.shrinking`), then the last
        example: (the failure found, whether it reproduced)."""
        try:
            with _one_cpu_thread(device), shrink_limit(self.shrink.budget):
                falsified, reproduced = _outcome(tests[0], self.state)
            if (falsified is not None and reproduced and self.restricted and self.shrink.deferred
                    and not self.shrink.out_of_time()):
                # Phase 2: anywhere, from phase 1's best example (the store holds it), in the time left.
                self.restricted = False
                store.demote()
                with _one_cpu_thread(device), shrink_limit(self.shrink.left()):
                    again, reproduced_again = _outcome(tests[1], self.state)
                if again is not None:
                    falsified, reproduced = again, reproduced_again
            if falsified is None and self.last_examples and not self.state.stopped:
                with _one_cpu_thread(device):
                    falsified = self._last()
        finally:
            getattr(self.gradient, "close", lambda: None)()  # an isolated implementation's gradient worker
        return falsified, reproduced

    def _last(self) -> _Falsified | None:
        """The last examples, outside Hypothesis, in turn to the first that fails: nothing to shrink (each
        is minimal for its bug already), and drawn examples that fail are reported as before. Each runs
        the metamorphic check it prefers where the run selected it, else the run's first. A share of
        a run runs those of its launch classes (every share places them alike: :mod:`fuzz.shares`)."""
        config = 0 if self.tuning.combinations > 1 else None
        first = next((name for name in self.names if name in METAMORPHIC), None)
        for example, check in (pair for pair in self.last_examples if not self.skips(pair[0])):
            try:
                self.one(example, Plan(check if check in self.names else first, 0, config))
            except _Falsified as exc:
                return exc
            except _Refused as refused:
                return refused.found
            except _HarnessStop as stop:
                raise stop.error from stop.error.__cause__
            except _Stopped:
                return None
            finally:
                if example.layout.is_huge:  # 8-16 GiB of address space: held, it keeps a later fork from committing
                    example.release()
        return None

    def _costs(self, before: _Counts, seconds: float, launched_here: int) -> Costs:
        """``launched_here``: the specializations this process launched during the run (an
        in-process implementation's; an isolated one's worker counts its own)."""
        after, costs, clock = _Counts.of(self.impl), self.state.costs, self.shrink
        compiling = after.compile_seconds - before.compile_seconds
        return Costs(
            generation_seconds=max(seconds - self.state.body_seconds, 0.0), call_seconds=costs.call_seconds,
            compile_seconds=compiling, check_seconds=max(self.state.body_seconds - costs.call_seconds - compiling, 0.0),
            shrink_seconds=clock.spent(), examples=self.state.examples, calls=costs.calls, shrink_steps=clock.steps,
            shrink_deferred=clock.deferred, launch_classes=len(clock.classes),
            specializations=after.specializations - before.specializations if after.isolated else launched_here,
            shrink_specializations=after.new_specializations - clock.launched_before if clock.shrinking else 0,
            compiles=after.compiles - before.compiles,
            shrink_stopped=clock.shrinking and clock.out_of_time(),
        )


@dataclass(frozen=True)
class _Counts:
    """What an implementation's worker (or this process) has counted so far."""

    compile_seconds: float
    compiles: int
    specializations: int  # an isolated implementation's worker's (new to it: its compiles on a GPU)
    isolated: bool

    @property
    def new_specializations(self) -> int:
        """Specializations new to the implementation's process so far: what a GPU has compiled for it."""
        return self.specializations if self.isolated else specialization.launched()

    @classmethod
    def of(cls, impl: Callable) -> _Counts:
        isolated = hasattr(impl, "variants")
        return cls(float(getattr(impl, "compile_seconds", 0.0) or 0.0), len(getattr(impl, "compiles", None) or []),
                   impl.variants if isolated else 0, isolated)


def _materialize(example: LseInput) -> None:
    """Allocate a huge-offset input on the GPU (waiting for room other processes hold)."""
    try:
        with_memory_retry(lambda: example.x, example.device)
    except RuntimeError as exc:  # torch.OutOfMemoryError is one
        if not out_of_memory(exc):
            raise
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
    except _Refused as refused:
        return refused.found, True
    except _HarnessStop as stop:
        raise stop.error from stop.error.__cause__
    except _Stopped:
        return None, True
    except _NOT_REPRODUCED as flaky:
        if state.last is None:  # what did not reproduce was no failure of the implementation
            raise HarnessError(f"the fuzzer's Hypothesis run raised {headline(flaky)}") from flaky
        return state.last, False
    except Exception as exc:  # Hypothesis' own (FlakyStrategyDefinition), or what it re-raised as fatal
        raise HarnessError(f"the fuzzer's Hypothesis run raised {headline(exc)}") from exc
    return None, True


@contextlib.contextmanager
def _one_cpu_thread(device: torch.device):
    """Run torch's CPU ops on one thread while fuzzing, then restore the caller's setting: examples hold
    at most ~65k elements, and on a busy machine (pytest -n auto) more threads spin against each other."""
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


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


def pristine(example: LseInput) -> LseInput:
    # The input as generated, not as the candidate left it: a kernel that writes into its input
    # (input_unchanged) must not hand its caller a scribbled counterexample. The view is rebuilt
    # from the untouched CPU values when it is first used.
    return LseInput(values=example.values, layout=example.layout, specs=example.specs, seed=example.seed,
                    device=example.device, batch=example.batch)


def _record_failure(result: CheckResult, falsified: _Falsified, reproducer_dir: Path | str | None) -> None:
    failure = falsified.failure
    result.failure, result.counterexample, result.plan = failure, pristine(falsified.example), falsified.plan
    directory = DEFAULT_REPRODUCER_DIR if reproducer_dir is None else Path(reproducer_dir)
    path = save_reproducer(
        directory, falsified.example, falsified.plan, checks=result.checks, contract=result.contract,
        check=result.check, message=failure.message(),
    )
    result.reproducer = path
    # An example the CPU could not run replays where it can: on a GPU.
    failure.replay = replay_command(path, result.target, call=result.contract.call,
                                    device="cuda" if isinstance(failure, Unsupported) else None)
