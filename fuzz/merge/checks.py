"""What must hold for ``merge_state(v_a, s_a, v_b, s_b) -> (v, s)``, one named check each.

* ``output_contract``: a pair (v, s), v of v_a's shape and dtype, s of shape (T, H) and float32.
* ``inputs_unchanged``: the four inputs are bit for bit the same after the call.
* ``agreement``: (v, s) within the tolerance model of the float64 oracle
  (:func:`reference.check_merge`), -inf and NaN where the oracle has them: two empty states give
  (0, -inf), never NaN and never a finite sentinel.
* ``swap``: merge(b, a) agrees too: a kernel that treats its two states differently (takes s_a
  as the max, guards one empty state only) is caught on the order the draw did not use.
* ``empty_identity``: merging a state with an empty one (s = -inf) gives that state back.
* ``shift``: adding c to both LSEs adds c to s and leaves v (the declared base's units: a kernel that
  mixes bases moves s by c log 2 or c / log 2).

The metamorphic checks judge each call against the oracle on its own inputs, so a correct kernel's
rounding cannot fail them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lse_fuzz._errors import LseFuzzError
from reference import check_merge

from ..failures import ImplError, Unsupported
from ..interpreter.emulation import raised_by_emulator

from .strategies import MergeInput

__all__ = ["MERGE_CHECKS", "MergeFailure", "base_hint", "bits", "invoke", "run_merge_checks", "run_op_checks"]

MERGE_CHECKS = ("output_contract", "inputs_unchanged", "agreement", "swap", "empty_identity", "shift")

MergeFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], object]


@dataclass
class MergeFailure(LseFuzzError, AssertionError):
    """A check that failed: its name, what was called, and what went wrong."""

    check: str
    detail: str
    example: MergeInput

    def __str__(self) -> str:
        return f"check {self.check!r} failed: {self.detail}\n  input:    {self.example.describe()}"


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
        t.element_size()]).clone()


def invoke(fn: Callable, example, what: str) -> object:
    """``fn(*example.named().values())``; what it raises becomes an :class:`ImplError` naming ``what``
    (the implementation's error), or an :class:`Unsupported` where the CPU's emulation of Triton refused
    a construct it used (no verdict on the CPU)."""
    try:
        with warnings.catch_warnings():  # NumPy's warnings from Triton's interpreter (log(0) of an empty state)
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*example.named().values())
    except Exception as exc:  # anything the implementation raises is its error, not ours
        refusal = raised_by_emulator(exc)
        if refusal is not None:
            raise Unsupported(what, refusal) from None
        raise ImplError(what, exc) from None


def _call(fn: MergeFn, example: MergeInput, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    result = invoke(fn, example, what)
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and all(isinstance(r, torch.Tensor) for r in result)):
        raise MergeFailure("output_contract", f"{what} returned {type(result).__name__}, expected a pair (v, s) of "
                           "tensors", example)
    v, s = result
    tokens, heads, _ = example.v_a.shape
    for name, got, shape, dtype in (("v", v, tuple(example.v_a.shape), example.v_a.dtype),
                                    ("s", s, (tokens, heads), torch.float32)):
        if tuple(got.shape) != shape or got.dtype != dtype:
            raise MergeFailure("output_contract", f"{what} returned {name} of shape {tuple(got.shape)} and dtype "
                               f"{got.dtype}; expected {shape} and {dtype}", example)
    return v, s


def base_hint(declared: str | int, judge: Callable[[str | int], bool]) -> str:
    """What the failure says of the LSE base: the base declared, and, where the result agrees with
    the oracle in the other base, that the kernel's LSEs are in that one (a wrong --lse-base, or a
    kernel that reads one base and writes the other)."""
    other = 2 if declared == "e" else "e"
    text = f" (LSEs declared base {declared}: --lse-base {declared})"
    if judge(other):
        text += f"; the result agrees with the oracle in base {other}: the kernel's LSEs are base {other}"
    return text


def _agree(check: str, example: MergeInput, v: torch.Tensor, s: torch.Tensor, what: str) -> None:
    def judge(base):
        return check_merge(example.v_a, example.s_a, example.v_b, example.s_b, v, s, base=base)

    comparison = judge(example.base)
    if not comparison.ok:
        hint = base_hint(example.base, lambda base: judge(base).ok)
        raise MergeFailure(check, f"{what}{hint}: {comparison.explain()}", example)


def _with(example: MergeInput, **tensors: torch.Tensor) -> MergeInput:
    fields = {"v_a": example.v_a, "s_a": example.s_a, "v_b": example.v_b, "s_b": example.s_b, **tensors}
    return MergeInput(**fields, kinds=example.kinds, layout=example.layout, base=example.base)


def _metamorphic(fn: MergeFn, example: MergeInput, check: str) -> None:
    if check == "swap":
        swapped = _with(example, v_a=example.v_b, s_a=example.s_b, v_b=example.v_a, s_b=example.s_a)
        v2, s2 = _call(fn, swapped, "merge(b, a)")
        _agree("swap", swapped, v2, s2, "merge(b, a) differs from the oracle, where merge(a, b) agreed")
    elif check == "empty_identity":
        empty = _with(example, s_b=torch.full_like(example.s_b, -torch.inf))
        v2, s2 = _call(fn, empty, "merge(a, empty)")
        _agree("empty_identity", empty, v2, s2, "merging with an empty state (s_b = -inf) does not return state a")
    elif check == "shift":
        c = 3.0
        shifted = _with(example, s_a=example.s_a + c, s_b=example.s_b + c)
        v2, s2 = _call(fn, shifted, f"merge with both LSEs + {c}")
        _agree("shift", shifted, v2, s2, f"adding {c} to both LSEs does not add {c} to s and leave v")


def run_op_checks(fn: Callable, example, checks: tuple[str, ...], *, what: str, call: Callable, agree: Callable,
                  metamorphic: Callable, metamorphic_checks: tuple[str, ...]) -> None:
    """The checks of one op's example, in order: the call (``call(fn, example, what)``, its
    output_contract), inputs_unchanged, agreement (``agree``), then each selected metamorphic check.
    The call gets a copy: ``example`` stays as drawn, for the oracle, the metamorphic checks and the
    report, whatever a kernel writes into its inputs (it fails inputs_unchanged, where selected)."""
    called = example.clone()
    outputs = call(fn, called, what)
    if "inputs_unchanged" in checks:
        for name, old in example.named().items():
            if not torch.equal(bits(old), bits(called.named()[name])):
                raise MergeFailure("inputs_unchanged", f"the call changed {name}", example)
    if "agreement" in checks:
        agree("agreement", example, *outputs, f"{what} differs from the float64 oracle")
    for check in metamorphic_checks:
        if check in checks:
            metamorphic(fn, example.clone(), check)  # the transformed inputs share the example's tensors


def run_merge_checks(fn: MergeFn, example: MergeInput, *, checks: tuple[str, ...] = MERGE_CHECKS) -> None:
    """Run the selected checks on one example (:func:`run_op_checks`); raise the first
    :class:`MergeFailure` (or the :class:`ImplError` of a call that raised, or :class:`Unsupported`:
    see :func:`invoke`)."""
    run_op_checks(fn, example, checks, what="merge(a, b)", call=_call, agree=_agree, metamorphic=_metamorphic,
                  metamorphic_checks=("swap", "empty_identity", "shift"))
