"""The runner of the ops besides the row LSE (``--op merge_state``, ``--op combine``).

``check_op(fn, op=...)`` probes the implementation once (a wrong signature or a result of the
wrong structure is bad input, :class:`InvalidArgument`), then lets Hypothesis draw the op's inputs
until ``budget`` of them pass or one fails. A failure is shrunk (fewest tokens and heads, D = 1,
ordinary states, contiguous float32) within ``shrink_seconds`` and saved as a reproducer that
``replay_op`` (or ``lse-fuzz replay FILE --impl TARGET``) runs again. The same seed gives the same
result. The implementation runs in this process: ``lse-fuzz check --op ...`` runs the whole run in
a child process, so that a crash or a hang is a verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from hypothesis import errors as hypothesis_errors
from hypothesis import given, reject, settings
from hypothesis import seed as hypothesis_seed

from reference.errors import InvalidArgument

from .. import defaults, validate
from ..failures import ImplError, Unsupported
from ..interpreter import repairs
from ..outcomes import run_status
from ..profiles import profile_settings
from ..shrinking import ShrinkClock, default_shrink_seconds, shrink_limit
from ..stream import own_stream
from ..target import describe_target
from .checks import MergeFailure
from . import ops as _ops
from .ops import Op, probe, v_dtypes
from .reproducer import load_op_reproducer, op_replay_command, save_op_reproducer
from .result import OpResult

__all__ = ["check_op", "replay_op"]

_NOT_REPRODUCED = getattr(hypothesis_errors, "FlakyFailure", hypothesis_errors.Flaky)


class _Falsified(Exception):
    """Every failure, raised from one place so that Hypothesis shrinks them all as one bug."""

    def __init__(self, failure: MergeFailure | ImplError, example) -> None:
        super().__init__(str(failure))
        self.failure, self.example = failure, example


class _Refused(BaseException):
    """The CPU's emulation refused a construct (before any failure): the run ends, unsupported
    (a BaseException, so that Hypothesis does not shrink it)."""

    def __init__(self, refusal: Unsupported, example) -> None:
        super().__init__(str(refusal))
        self.refusal, self.example = refusal, example


def _checks(what: Op, checks: Iterable[str] | str | None) -> tuple[str, ...]:
    if checks is None:
        return what.checks
    names = [c.strip() for c in checks.split(",")] if isinstance(checks, str) else list(checks)
    unknown = [name for name in names if name not in what.checks]
    if unknown or not names:
        raise InvalidArgument(f"checks={checks!r}; --op {what.name} has the checks {', '.join(what.checks)}.")
    return tuple(dict.fromkeys(names))


def check_op(
    fn: Callable,
    *,
    op: str = "merge_state",
    budget: int | None = None,
    seed: int = 0,
    device: torch.device | str | None = None,
    lse_base: str | int = "e",
    dtypes: Iterable[str] | str | None = None,
    layouts: str | None = None,
    checks: Iterable[str] | str | None = None,
    shrink_seconds: float | None = None,
    reproducer_dir: Path | str | None = None,
    target: str | None = None,
    profile: str | None = None,
    pending: Path | str | None = None,
) -> OpResult:
    """Fuzz ``fn`` as the op ``op`` computes it (:data:`fuzz.merge.ops.OPS`) and return what was found.

    ``lse_base`` is the declared base of every LSE in and out ("e" or 2); ``dtypes`` the dtypes of v
    drawn (float32, float16, bfloat16); ``layouts`` "any" (default) or "contiguous" (a kernel that
    takes contiguous tensors only); ``checks`` a subset of the op's checks. Failures are saved
    under ``reproducer_dir`` (default ``./.lse-fuzz``). ``pending``: a file each example is written
    to before its calls (what a process that crashed was running; :mod:`fuzz.merge.child_run`).
    """
    what = _ops.op(op)
    if not callable(fn):
        raise InvalidArgument(f"impl={fn!r} is not callable; pass a function {what.call}.")
    budget = defaults.CHECK_BUDGET if budget is None else validate.integer(budget, name="budget", low=1)
    seed, device = validate.integer(seed, name="seed", low=0), validate.device(device)
    base, names, shapes = _ops.lse_base(lse_base), _checks(what, checks), _ops.layouts(layouts)
    shrink = validate.seconds(default_shrink_seconds(device) if shrink_seconds is None else shrink_seconds,
                              name="shrink_seconds", zero=True)
    target = describe_target(fn) if target is None else target
    if device.type == "cpu":
        repairs.install()  # the interpreter's semantics of what it cannot run (refused by name, as on a GPU)
    run = _Run(fn, what, names, ShrinkClock(shrink), None if pending is None else Path(pending))
    run.save_pending(what.parts.probe_input(device, base))  # the probe's call may be the one that crashes
    probe(fn, what, target=target, device=device, base=base)
    strategy = what.parts.inputs(dtypes=v_dtypes(dtypes), base=base, device=device, layouts=shapes)
    started = time.perf_counter()
    with shrink_limit(shrink):
        found, reproduced = run.hypothesis(strategy, settings(profile_settings(profile), max_examples=budget), seed)
    result = OpResult(op=what.name, status=run_status(None if found is None else found[0], reproduced=reproduced),
                      examples=run.examples, seconds=time.perf_counter() - started, target=target, seed=seed,
                      budget=budget, base=base, checks=names, shrink_seconds=run.clock.spent(),
                      shrink_stopped=run.clock.shrinking and run.clock.out_of_time(),
                      layouts=() if len(shapes) > 1 else shapes)
    if found is not None:
        _record(result, what, *found, reproducer_dir)
        if not reproduced:
            result.notes.append("the failure did not reproduce when the same example ran again: the "
                                "implementation keeps state between calls or is nondeterministic")
        if result.shrink_stopped:
            result.notes.append(f"shrinking stopped after its budget of {shrink:g} s (--shrink-seconds): this is "
                                "the smallest failing input found by then")
    return result


class _Run:
    """One run: the body of the Hypothesis test (:meth:`one`) and what it saw."""

    def __init__(self, fn: Callable, what: Op, names: tuple[str, ...], clock: ShrinkClock,
                 pending: Path | None = None) -> None:
        self.fn, self.what, self.names, self.clock, self.pending = fn, what, names, clock, pending
        self.examples = 0
        self.last: _Falsified | None = None

    def save_pending(self, example) -> None:
        """``example`` as the input a crash leaves behind (replaced whole, never half written)."""
        if self.pending is not None:
            written = save_op_reproducer(self.pending.parent, self.what, example, checks=self.names, check=None,
                                         message="the process running this example ended before it finished",
                                         seed=0, kind="crash")
            written.replace(self.pending)

    def one(self, example) -> None:
        self.examples += 1
        self.save_pending(example)
        try:
            # The checks call on a copy: the example stays as drawn (the counterexample saved).
            self.what.parts.run_checks(self.fn, example, checks=self.names)
        except (MergeFailure, ImplError) as failure:
            failure.__traceback__ = None  # its frames hold the tensors; Hypothesis keeps every failure it meets
            self.clock.start()
            self.last = _Falsified(failure, example)
            raise self.last from None
        except Unsupported as refusal:
            if self.last is not None:  # a failure was found: it wins, this example is no instance of it
                reject()
            raise _Refused(refusal, example) from None

    def hypothesis(self, strategy, phase: settings, seed: int) -> tuple[tuple | None, bool]:
        """Run the test: ((the failure, its example) or None, whether it reproduced)."""

        @phase
        @hypothesis_seed(seed)
        @given(example=strategy)
        def test(example) -> None:
            self.one(example)

        try:
            with own_stream():  # one seed, one stream (fuzz.stream)
                test()
        except _Falsified as exc:
            return (exc.failure, exc.example), True
        except _Refused as refused:
            return (refused.refusal, refused.example), True
        except _NOT_REPRODUCED:
            if self.last is None:
                raise
            return (self.last.failure, self.last.example), False
        return None, True


def _record(result: OpResult, what: Op, failure, example, reproducer_dir) -> None:
    result.failure, result.counterexample = failure, example
    if not isinstance(failure, MergeFailure):  # an error's report names its input (a check's failure holds it)
        failure.input = example.describe()
    directory = Path(defaults.REPRODUCER_DIR) if reproducer_dir is None else Path(reproducer_dir)
    message = str(failure) if isinstance(failure, MergeFailure) else failure.message()
    check = failure.check if isinstance(failure, MergeFailure) else None
    result.reproducer = save_op_reproducer(directory, what, example, checks=result.checks, check=check,
                                           message=message, seed=result.seed)
    result.replay = op_replay_command(result.reproducer, result.target)
    if not isinstance(failure, MergeFailure):
        failure.replay = result.replay


def replay_op(path: Path | str, fn: Callable, *, device: torch.device | str | None = None,
              target: str | None = None) -> OpResult:
    """Run the op's example saved at ``path`` once more through the checks that ran on it."""
    saved = load_op_reproducer(path)
    if not callable(fn):
        raise InvalidArgument(f"impl={fn!r} is not callable; pass a function {saved.op.call}.")
    if device is None:
        device = "cuda" if saved.meta.get("device", "").startswith("cuda") and torch.cuda.is_available() else "cpu"
    device = validate.device(device)
    if device.type == "cpu":
        repairs.install()
    target = describe_target(fn) if target is None else target
    example = saved.example(device)
    started = time.perf_counter()
    failure = None
    try:
        saved.op.parts.run_checks(fn, example, checks=saved.checks)
    except (MergeFailure, ImplError, Unsupported) as exc:
        failure = exc
    result = OpResult(op=saved.op.name, status=run_status(failure), examples=1, seconds=time.perf_counter() - started,
                      target=target, seed=saved.seed, budget=1, base=saved.base, checks=saved.checks,
                      failure=failure, counterexample=example, reproducer=Path(path))
    if failure is not None:
        result.replay = op_replay_command(path, target)
        if not isinstance(failure, MergeFailure):
            failure.replay, failure.input = result.replay, example.describe()
    return result
