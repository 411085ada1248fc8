"""What must hold for a row-wise LSE implementation, one named check per property.

Every example costs about three calls of the implementation: one call whose output feeds the
checks that need only it (output contract, input unchanged, agreement, bounds:
:mod:`.first_call`), a second call on the same input (determinism), and one metamorphic check
drawn per example (shift, permutation, row independence, fresh values: :mod:`.metamorphic`),
each with one more call; with ``--backward``, one call of the forward and backward, whose
gradient the gradient checks judge (:mod:`.backward`). :func:`run_checks` runs them in that order and raises the first
:class:`~fuzz.failures.CheckFailure` (or :class:`~fuzz.failures.ImplError` when the
implementation raised).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .. import validate
from ..contract import Contract
from ..costs import Costs
from ..failures import CheckFailure, ImplError, Unsupported
from ..strategies import LseInput
from ..timing import SlowCall
from . import backward, first_call, metamorphic
from .context import Context, Impl, Pin, Plan

__all__ = ["CHECKS", "GRADIENT_CHECKS", "METAMORPHIC", "Check", "CheckFailure", "Context", "Impl", "ImplError", "Pin", "Plan", "Stage",
           "run_checks", "validate_checks"]


class Stage(enum.Enum):
    """When a check runs within one example."""

    FIRST_CALL = "first_call"  # judges the output of the example's first call
    SECOND_CALL = "second_call"  # calls again on the same input
    METAMORPHIC = "metamorphic"  # calls on a transformed input; one drawn per example
    BACKWARD = "backward"  # judges the gradient of the forward and backward call (--backward only)


@dataclass(frozen=True)
class Check:
    """A named property: ``fn(impl, example, ctx)`` raises :class:`CheckFailure` when it fails."""

    name: str
    summary: str
    why: str
    fn: Callable[[Impl, LseInput, Context], None] = field(repr=False)
    stage: Stage = Stage.FIRST_CALL


_CHECK_LIST = (
    Check(
        "output_contract",
        "a new torch.Tensor of shape (M,), dtype float32 or x.dtype, on x.device, not sharing x's memory",
        "callers index, cast and keep the result; a wrong shape or dtype breaks them far from the kernel, "
        "and an output aliasing the input is overwritten by the caller's next write",
        first_call.check_output_contract,
    ),
    Check(
        "input_unchanged",
        "x is bit for bit the same after the call (NaN payloads and padding included)",
        "callers reuse their input (e.g. for the backward pass); a kernel that shifts or masks in place "
        "corrupts it silently",
        first_call.check_input_unchanged,
    ),
    Check(
        "agreement",
        "each row matches the float64 oracle within the tolerance model; non-finite rows exactly",
        "this is the answer itself: the oracle is exact torch.logsumexp semantics in float64 and the "
        "tolerance covers any correct float32-accumulating kernel",
        first_call.check_agreement,
    ),
    Check(
        "bounds",
        "finite rows satisfy max <= lse <= max + log N (up to the tolerance)",
        "these bounds hold for every input; leaving them means the max was not added back, masked lanes "
        "were counted, or the log was taken per lane",
        first_call.check_bounds,
    ),
    Check(
        "memory_bounds",
        "on the CPU, every lane a load, store or atomic lets through addresses the launch's tensor arguments",
        "a kernel that reads past its row and discards the lanes, or stores past its output, returns the right "
        "numbers on a GPU (the read lands in the allocator's slack) until the memory there is another tensor's "
        "or unmapped; Triton's interpreter checks each access before it happens",
        first_call.check_memory_bounds,
    ),
    Check(
        "uninitialized_read",
        "on the CPU, no kernel reads, and no result holds, bytes the call allocated with torch.empty and nothing "
        "wrote",
        "a scratch buffer read before a program wrote it (a partial skipped, an accumulator assumed zero) holds "
        "what the allocator left there: zeros on a fresh page, and the right answer, until the memory is reused",
        first_call.check_uninitialized_read,
    ),
    Check(
        "determinism",
        "two calls on the same input return identical bits",
        "nondeterministic results make training runs irreproducible and hide races between programs",
        first_call.check_determinism,
        Stage.SECOND_CALL,
    ),
    Check(
        "shift_invariance",
        "lse(x + c) = lse(x) + c for a per-row constant c",
        "a kernel that forgets to add the row max back is off by exactly the shift, yet looks like a valid "
        "log-probability",
        metamorphic.check_shift_invariance,
        Stage.METAMORPHIC,
    ),
    Check(
        "permutation_invariance",
        "permuting the entries of a row does not change its lse",
        "an answer that depends on entry order means the max or the sum only sees part of the row "
        "(e.g. the first tile's max)",
        metamorphic.check_permutation_invariance,
        Stage.METAMORPHIC,
    ),
    Check(
        "row_independence",
        "a row alone gives the same answer as inside the batch",
        "one row's answer leaking into another (shared max, wrong row stride, unmasked rows) corrupts "
        "every batch that mixes rows",
        metamorphic.check_row_independence,
        Stage.METAMORPHIC,
    ),
    Check(
        "fresh_values",
        "new values written into the same tensor get their own answer",
        "a result cached by shape, pointer or object is stale as soon as the caller reuses a buffer",
        metamorphic.check_fresh_values,
        Stage.METAMORPHIC,
    ),
)
_BACKWARD_CHECKS = (
    Check(
        "grad_input_unchanged",
        "with --backward: x is bit for bit the same after the forward and backward",
        "the input is the previous layer's activation, which its own backward still needs; a backward that "
        "writes its gradient over it corrupts training silently",
        backward.check_grad_input_unchanged,
        Stage.BACKWARD,
    ),
    Check(
        "grad_agreement",
        "with --backward: dx = g * softmax(x) within the gradient's tolerance model; NaN where torch has NaN",
        "the gradient is what training uses; a softmax without its max shift, an upstream gradient not applied "
        "or masked lanes counted train a wrong model with no error",
        backward.check_grad_agreement,
        Stage.BACKWARD,
    ),
)
CHECKS: dict[str, Check] = {check.name: check for check in _CHECK_LIST}
"""Every check by name, in the order they run within an example."""

METAMORPHIC: tuple[str, ...] = tuple(c.name for c in _CHECK_LIST if c.stage is Stage.METAMORPHIC)
GRADIENT_CHECKS: dict[str, Check] = {check.name: check for check in _BACKWARD_CHECKS}
"""The checks of the backward, by name: they run after the forward's, only with ``--backward``."""


def validate_checks(checks: Iterable[str] | str | None, *, name: str = "checks") -> tuple[str, ...]:
    """The requested check names in registry order (the forward's, then the gradient's); the
    forward's for None (the gradient's join them with ``--backward``)."""
    if checks is None:
        return tuple(CHECKS)
    return validate.names(checks, name=name, choices={**CHECKS, **GRADIENT_CHECKS})


def run_checks(impl: Impl, example: LseInput, *, checks: Iterable[str] | None = None, plan: Plan | None = None,
               contract: Contract | str = Contract.STRICT, time_limit: float | None = None,
               on_slow: Callable[[SlowCall], None] | None = None, pin: Pin | None = None,
               gradient_impl: Impl | None = None, costs: Costs | None = None) -> None:
    """Run the selected checks on one example; raise the first :class:`CheckFailure` or :class:`ImplError`
    (:class:`~fuzz.failures.Unsupported` when the CPU's emulation cannot run a construct it used).

    All first-call checks run, then determinism, then only the metamorphic check the plan names
    (default: the first selected one). ``contract`` is the declared one (its output dtype policy
    is what ``output_contract`` holds the result to). A call slower than ``time_limit`` seconds
    fails the check ``time_limit``; without one, a slow call is passed to ``on_slow`` (see
    :mod:`fuzz.timing`). ``pin(plan.config)`` wraps every call (see :mod:`fuzz.interpreter.autotune`); the
    configurations the failing call ran are added to the failure's report. ``gradient_impl``
    (``x -> dx``, :func:`fuzz.gradient.gradient_of`) turns the gradient checks on; without it they
    are skipped. ``costs`` (a :class:`fuzz.costs.Costs`) counts the calls and their seconds.
    """
    names = validate_checks(checks)
    if gradient_impl is not None and checks is None:
        names = (*names, *GRADIENT_CHECKS)
    if plan is None:
        plan = Plan(next((n for n in names if n in METAMORPHIC), None))
    ctx = Context(impl, example, plan, Contract.parse(contract), time_limit=time_limit, on_slow=on_slow, pin=pin,
                  gradient_impl=gradient_impl, costs=costs)
    ctx.judge_memory = "memory_bounds" in names
    ctx.judge_init = "uninitialized_read" in names
    try:
        ctx.out = ctx.call(example.x, "the first call")
        for name in names:
            check = CHECKS.get(name) or GRADIENT_CHECKS[name]
            if check.stage is Stage.BACKWARD and gradient_impl is None:
                continue
            if check.stage is not Stage.METAMORPHIC or name == plan.metamorphic:
                check.fn(impl, example, ctx)
    except CheckFailure as failure:
        known = {**CHECKS, **GRADIENT_CHECKS}
        failure.why = failure.why or (known[failure.check].why if failure.check in known else "")
        failure.input = example.describe()
        failure.details.extend(f"config:   {line}" for line in ctx.configs)
        raise
    except (ImplError, Unsupported) as error:
        error.input = example.describe() + "".join(f"; config {line}" for line in ctx.configs)
        raise
