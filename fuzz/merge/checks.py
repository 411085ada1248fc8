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

from collections.abc import Callable
from dataclasses import dataclass

import torch

from lse_fuzz._errors import LseFuzzError
from reference import check_merge

from .strategies import MergeInput

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


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
        t.element_size()]).clone()


def _call(fn: MergeFn, example: MergeInput, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    result = fn(example.v_a, example.s_a, example.v_b, example.s_b)
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


def _agree(check: str, example: MergeInput, v: torch.Tensor, s: torch.Tensor, what: str) -> None:
    comparison = check_merge(example.v_a, example.s_a, example.v_b, example.s_b, v, s, base=example.base)
    if not comparison.ok:
        raise MergeFailure(check, f"{what}: {comparison.explain()}", example)


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


def run_merge_checks(fn: MergeFn, example: MergeInput, *, checks: tuple[str, ...] = MERGE_CHECKS) -> None:
    """Run the selected checks on one example; raise the first :class:`MergeFailure`."""
    before = [_bits(t) for t in (example.v_a, example.s_a, example.v_b, example.s_b)]
    v, s = _call(fn, example, "merge(a, b)")
    if "inputs_unchanged" in checks:
        names = ("v_a", "s_a", "v_b", "s_b")
        for name, old, t in zip(names, before, (example.v_a, example.s_a, example.v_b, example.s_b)):
            if not torch.equal(old, _bits(t)):
                raise MergeFailure("inputs_unchanged", f"the call changed {name}", example)
    if "agreement" in checks:
        _agree("agreement", example, v, s, "merge(a, b) differs from the float64 oracle")
    for check in ("swap", "empty_identity", "shift"):
        if check in checks:
            _metamorphic(fn, example, check)
