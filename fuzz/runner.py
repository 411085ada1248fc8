"""The runner: drives an implementation through the strategies and the checks.

``check(impl)`` lets Hypothesis generate examples until ``budget`` of them pass or one fails;
a failure is shrunk to a minimal counterexample (fewest rows and columns, mildest recipe,
contiguous float32 where the bug allows) and saved as a reproducer that ``replay`` (or
``lse-fuzz replay FILE --impl TARGET``) runs again. The same seed gives the same result.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from hypothesis import Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase, MultiplexedDatabase

from reference.errors import InvalidArgument

from . import defaults, validate
from .interpreter import autotune, repairs, specialization
from .merge import OpResult, check_op, replay_op
from .merge.ops import op as known_op
from .merge.reproducer import is_op_reproducer
from .calls import CallConvention
from .checks import GRADIENT_CHECKS, METAMORPHIC, Plan, run_checks, validate_checks
from .failures import CheckFailure, ImplError, Unsupported
from .gpu_memory import HugeInputSlots, out_of_memory, sparse_huge_inputs, with_memory_retry
from .gradient import gradient_of
from .outcomes import HarnessError, run_status
from .profiles import PROFILES, database_for, profile_settings
from .reproducer import load_reproducer, replay_command
from .result import CheckResult
from .run import PREFER_COMPILED, Run, RunStop, Tuning, pristine
from .shares import ShareSplit
from .shrinking import ShrinkClock, ShrinkStore, default_shrink_seconds
from .strategies import Contract, LseInput, huge_examples, lse_inputs, overflow_example, padded_example
from .target import describe_target

__all__ = ["OP_OPTIONS", "PREFER_COMPILED", "CheckResult", "RunStop", "check", "replay"]

DEFAULT_BUDGET = defaults.CHECK_BUDGET


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


def _tuning(impl: Callable) -> Tuning:
    """An isolated implementation reports its worker's kernels; an in-process one is searched here."""
    if hasattr(impl, "tuning"):
        combinations, description = impl.tuning()
        return Tuning(impl.pinned, combinations, tuple(description)) if combinations else Tuning()
    pin, combinations, description = autotune.tuning(impl)
    return Tuning(pin, combinations, tuple(description)) if pin is not None else Tuning()


def _interpreter_semantics(device: torch.device) -> None:
    """An in-process implementation on the CPU runs in Triton's interpreter: its bfloat16 arithmetic
    is computed on the values, libdevice and a kernel's globals are the compiler's, a kernel Triton's
    compiler refuses is refused, as on a GPU, and what the interpreter cannot run is refused by name
    (fuzz.interpreter.repairs; a worker does it itself). And what an
    in-process implementation launches is counted (fuzz.interpreter.specialization; a worker counts its own)."""
    specialization.install()
    if device.type == "cpu":
        repairs.install()


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
    shrink_seconds: float | None = None,
    stop: RunStop | None = None,
    share: tuple[int, int] | None = None,
    op: str = "lse",
    lse_base: str | int = "e",
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
    ran (a crashed run leaves the input that crashed it): run untrusted ones isolated (``lse-fuzz check``). A call far slower than
    ``reference.lse`` on the same input is a finding in ``result.slow`` (see :mod:`fuzz.timing`);
    with ``time_limit`` (seconds) a call slower than that fails the example instead (check
    ``time_limit``). ``target`` is the TARGET string printed in the replay command (derived from
    ``impl`` when omitted). Failures are saved under ``reproducer_dir`` (default ``./.lse-fuzz``).
    ``backward`` (or a gradient check in ``checks``) also judges the gradient (:mod:`fuzz.gradient`).
    ``shrink_seconds`` bounds a failure's shrinking (default: :data:`fuzz.shrinking.DEFAULT_SHRINK_SECONDS`);
    past it the smallest failing input found is reported (``result.costs.shrink_stopped``). ``stop``
    (a :class:`RunStop`) lets the parts of one run end each other. ``share=(k, K)``: only the examples
    of launch classes of share k (K runs, k = 0..K-1, run one's examples). ``result.costs``: the time spent.
    ``lse_base=2``: an LSE in base 2. ``op``: "merge_state", "combine": :func:`fuzz.merge.check_op`.
    """
    if op != "lse":
        return _other_op(impl, op, {name: value for name, value in locals().items() if name not in ("impl", "op")})
    if not callable(impl):
        raise InvalidArgument(f"impl={impl!r} is not callable; pass a function x -> Tensor.")
    base = profile_settings(profile)
    budget = (PROFILES[profile] if profile else DEFAULT_BUDGET) if budget is None else budget
    budget, seed = validate.integer(budget, name="budget", low=1), validate.integer(seed, name="seed", low=0)
    device, share = validate.device(device), _share(share)
    time_limit = validate.seconds(time_limit, name="time_limit", optional=True)
    shrink_seconds = validate.seconds(default_shrink_seconds(device) if shrink_seconds is None else shrink_seconds,
                                      name="shrink_seconds", zero=True)
    contract = Contract.parse(contract).with_options(dtypes=dtypes, layouts=layouts, output_dtype=output_dtype,
                                                     max_n=max_n, call=call, lse_base=None if lse_base == "e" else lse_base)
    names, backward = _selected(checks, backward)
    _interpreter_semantics(device)  # and the count of what an in-process implementation launches
    run = Run(impl, names, contract, describe_target(impl) if target is None else target, reproducer_dir,
              time_limit, _tuning(impl), _gradient(impl, contract) if backward else None,
              _huge_slots(device, huge_offsets), stop=stop,
              shrink=ShrinkClock(shrink_seconds), prefer_compiled=PREFER_COMPILED[device.type], share=share)
    inputs = lse_inputs(contract=contract, device=device, max_elements=max_elements, max_rows=max_rows,
                        huge_offsets=huge_offsets)
    last = _last_examples(contract, device, huge_offsets, default_shapes=max_elements is None, budget=budget)
    _shared(run, share, last)
    store = ShrinkStore()  # every share draws what the whole run draws: the shares split one stream
    tests = _phase_tests(run, inputs, settings(base, max_examples=budget - len(last)), seed,
                         database_for(database), store)
    return run.result(tests, device, seed, budget, store)


def _shared(run: Run, share: tuple[int, int] | None, last: tuple[tuple[LseInput, str | None], ...]) -> None:
    """Which share runs which launch classes (fuzz.shares), the same in every share; every share
    holds the last examples and runs those of its own groups (Run.skips)."""
    run.last_examples = last
    run.split = None if share is None else ShareSplit(share[1])


def _selected(checks: Iterable[str] | None, backward: bool) -> tuple[tuple[str, ...], bool]:
    """The checks to run and whether the gradient is judged (a gradient check selected says so)."""
    names = validate_checks(checks)
    backward = backward or any(name in GRADIENT_CHECKS for name in names)
    return ((*names, *GRADIENT_CHECKS) if backward and checks is None else names), backward


def _huge_slots(device: torch.device, huge_offsets: bool) -> HugeInputSlots | None:
    """Dense huge inputs on a GPU take a slot each; sparse ones are megabytes and need none."""
    dense = device.type == "cuda" and huge_offsets and not sparse_huge_inputs(device)
    return HugeInputSlots(device) if dense else None


OP_OPTIONS = ("budget", "seed", "device", "dtypes", "layouts", "checks", "profile", "shrink_seconds",
              "reproducer_dir", "target", "lse_base")
"""The options of :func:`check` an op's run takes; the others are the row LSE's."""


def _other_op(impl: Callable, op: str, given: dict) -> OpResult:
    """An op's run (:func:`fuzz.merge.check_op`); InvalidArgument for an option of the row LSE given."""
    known_op(op)
    defaults_ = {name: p.default for name, p in inspect.signature(check).parameters.items()}
    row_only = sorted(name for name, value in given.items() if name not in OP_OPTIONS and value != defaults_[name])
    if row_only:
        raise InvalidArgument(f"{', '.join(f'{name}=' for name in row_only)}...: options of the row LSE (op='lse'); "
                              f"op={op!r} takes {', '.join(OP_OPTIONS)}.")
    return check_op(impl, op=op, **{name: given[name] for name in OP_OPTIONS})


def _last_examples(contract: Contract, device: torch.device, huge_offsets: bool, *, default_shapes: bool,
                   budget: int) -> tuple[tuple[LseInput, str | None], ...]:
    """The budget's last examples, run after the drawn ones, each with the metamorphic check it
    prefers (None: the run's first): the padded rows, the one ordinary small input among them, with
    fresh_values (an answer cached by object, pointer or shape shows on every seed), the views past
    2**31 elements (with huge offsets) and, with default shapes, the float16 overflow row; at most
    ``budget - 1``. On a GPU other processes filled, made once they gave room back (or a
    HarnessError: no verdict on the implementation, not a traceback)."""
    def made():
        return [(padded_example(contract, device), "fresh_values"),
                *((e, None) for e in (huge_examples(contract, device) if huge_offsets else [])),
                *([(overflow_example(contract, device), None)] if default_shapes else [])]

    try:
        last = with_memory_retry(made, device)
    except RuntimeError as exc:
        if not out_of_memory(exc):
            raise
        raise HarnessError(f"the GPU had no room for the fuzzer's own fixed examples even after waiting: "
                           f"{str(exc).splitlines()[0]} Run fewer jobs at once.") from None
    return tuple((e, check) for e, check in last if e is not None)[:budget - 1]


def _share(share: tuple[int, int] | None) -> tuple[int, int] | None:
    if share is not None:
        count = validate.integer(share[1], name="share[1]", low=1)
        validate.integer(share[0], name="share[0]", low=0, high=count - 1)
    return share


def _phase_tests(run: Run, inputs: st.SearchStrategy[LseInput], first: settings, seed: int,
                 database: ExampleDatabase | None, store: ShrinkStore) -> list[Callable[[], None]]:
    """The Hypothesis tests of the run's phases (:mod:`fuzz.shrinking`): the first generates and
    shrinks, saving its failures in ``store`` (and in the caller's ``database``, if any); the second
    shrinks on from the first's best, reading ``store`` alone."""
    # Failures saved in a database belong to this implementation and selection only.
    digest = repr((run.target, run.contract.to_dict(), run.names)).encode()
    first = settings(first, database=store if database is None else MultiplexedDatabase(database, store))
    again = settings(first, phases=(Phase.reuse, Phase.shrink), database=store)
    return [_hypothesis_test(run, inputs, plans(run.names, run.tuning.combinations), phase, seed, digest)
            for phase in (first, again)]


def _hypothesis_test(run: Run, inputs: st.SearchStrategy[LseInput], plan_strategy: st.SearchStrategy[Plan],
                     phase: settings, seed: int, digest: bytes) -> Callable[[], None]:
    """The Hypothesis test of ``run`` under ``phase``'s settings. Every phase's test is made here, so
    all of them have one database key (Hypothesis derives it from this function's code and the
    digest): a later phase resumes from the examples an earlier one saved."""

    @phase
    @hypothesis_seed(seed)
    @given(example=inputs, plan=plan_strategy)
    def test(example: LseInput, plan: Plan) -> None:
        if not run.skips(example):
            run.one(example, plan)

    test.hypothesis.inner_test._hypothesis_internal_add_digest = digest
    return test


def _gradient(impl: Callable, contract: Contract) -> Callable:
    """``x -> dx`` for the gradient checks: an isolated implementation's twin worker, else
    :func:`~fuzz.gradient.gradient_of` the implementation itself."""
    if not contract.call.is_default:
        raise InvalidArgument("--backward judges the gradient of the 2-D lse(x): drop the call convention's "
                              "options (--ndim, --dim, --keepdim, --call-args, --result) or --backward.")
    if contract.lse_base != "e":
        raise InvalidArgument("--backward judges the gradient of a natural-log LSE: drop --lse-base 2 or --backward.")
    twin = getattr(impl, "gradient", None)
    return twin() if callable(twin) else gradient_of(impl)


def replay(
    path: Path | str,
    impl: Callable,
    *,
    device: torch.device | str | None = None,
    target: str | None = None,
) -> CheckResult:
    """Run the example saved at ``path`` once more through the checks that failed on it (an op's
    reproducer too: :func:`fuzz.merge.replay_op`, which returns an :class:`fuzz.merge.OpResult`)."""
    if is_op_reproducer(path):
        return replay_op(path, impl, device=device, target=target)
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
    except (CheckFailure, ImplError, Unsupported) as exc:
        failure = exc
    finally:
        getattr(gradient, "close", lambda: None)()
    result = CheckResult(
        status=run_status(failure), examples=1, seconds=time.perf_counter() - started, target=target,
        seed=saved.seed, budget=1, contract=saved.contract, checks=saved.checks, failure=failure,
        counterexample=pristine(example), plan=saved.plan, reproducer=Path(path),
    )
    if failure is not None:
        failure.replay = replay_command(path, target, call=saved.contract.call,
                                        device="cuda" if isinstance(failure, Unsupported) else None)
    return result
