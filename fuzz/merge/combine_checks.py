"""What must hold for ``combine(v, s) -> (v_out, s_out)`` over S splits, one named check each.

* ``output_contract``: a pair (v_out, s_out), v_out of shape (T, H, D) in v's dtype, s_out of shape
  (T, H) and float32.
* ``inputs_unchanged``: v and s are bit for bit the same after the call.
* ``agreement``: (v_out, s_out) within the tolerance model of the float64 oracle
  (:func:`reference.check_combine`), -inf and NaN where the oracle has them: all splits empty give
  (0, -inf), never NaN and never a finite sentinel.
* ``permute``: the splits in reverse order agree too: a kernel that treats its splits differently
  (takes the first as the max, guards only the last) is caught on the order the draw did not use.
* ``empty_split``: one more split, empty (s = -inf) with NaN in its v, changes nothing: its weight is
  0 and its v is never read into the sum.
* ``shift``: adding c to every LSE adds c to s_out and leaves v_out (the declared base's units: a
  kernel that mixes bases moves s_out by c log 2 or c / log 2; one without the max shift overflows).

The metamorphic checks judge each call against the oracle on its own inputs, so a correct kernel's
rounding cannot fail them. Their inputs keep the example's layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from reference import check_combine

from .checks import MergeFailure, base_hint, invoke, run_op_checks
from .combine_strategies import MAX_SPLITS, CombineInput, laid_out

__all__ = ["COMBINE_CHECKS", "SHIFT", "run_combine_checks"]

COMBINE_CHECKS = ("output_contract", "inputs_unchanged", "agreement", "permute", "empty_split", "shift")

CombineFn = Callable[[torch.Tensor, torch.Tensor], object]

SHIFT = 3.0  # the c of ``shift``


def _call(fn: CombineFn, example: CombineInput, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    result = invoke(fn, example, what)
    pair = isinstance(result, (tuple, list)) and len(result) == 2
    if not (pair and all(isinstance(r, torch.Tensor) for r in result)):
        raise MergeFailure("output_contract", f"{what} returned {type(result).__name__}, expected a pair "
                           "(v_out, s_out) of tensors", example)
    v_out, s_out = result
    _, tokens, heads, dim = example.v.shape
    for name, got, shape, dtype in (("v_out", v_out, (tokens, heads, dim), example.v.dtype),
                                    ("s_out", s_out, (tokens, heads), torch.float32)):
        if tuple(got.shape) != shape or got.dtype != dtype:
            raise MergeFailure("output_contract", f"{what} returned {name} of shape {tuple(got.shape)} and dtype "
                               f"{got.dtype}; expected {shape} and {dtype}", example)
    return v_out, s_out


def _agree(check: str, example: CombineInput, v_out: torch.Tensor, s_out: torch.Tensor, what: str) -> None:
    def judge(base):
        return check_combine(example.v, example.s, v_out, s_out, base=base)

    comparison = judge(example.base)
    if not comparison.ok:
        hint = base_hint(example.base, lambda base: judge(base).ok)
        raise MergeFailure(check, f"{what}{hint}: {comparison.explain()}", example)


def _with(example: CombineInput, v: torch.Tensor, s: torch.Tensor) -> CombineInput:
    """The example with new values for v and s, laid out as its own."""
    return CombineInput(laid_out(v, example.layout), laid_out(s, example.layout), kinds=example.kinds,
                        layout=example.layout, base=example.base)


def _with_empty_split(example: CombineInput) -> CombineInput:
    """One more split, empty: s = -inf and NaN in v. At S = MAX_SPLITS it takes the last split's
    place instead, to stay in the contract (the call is judged on its own input either way)."""
    v, s = example.v, example.s
    if v.shape[0] >= MAX_SPLITS:
        v, s = v[:MAX_SPLITS - 1], s[:MAX_SPLITS - 1]
    return _with(example, torch.cat([v, torch.full_like(v[:1], math.nan)]),
                 torch.cat([s, torch.full_like(s[:1], -math.inf)]))


def _metamorphic(fn: CombineFn, example: CombineInput, check: str) -> None:
    if check == "permute":
        reversed_ = _with(example, example.v.flip(0), example.s.flip(0))
        v2, s2 = _call(fn, reversed_, "combine of the splits reversed")
        _agree("permute", reversed_, v2, s2, "the splits in reverse order differ from the oracle, where the drawn "
               "order agreed")
    elif check == "empty_split":
        padded = _with_empty_split(example)
        v2, s2 = _call(fn, padded, "combine with an empty split appended")
        _agree("empty_split", padded, v2, s2, "appending an empty split (s = -inf, NaN in its v) changes the result")
    elif check == "shift":
        shifted = _with(example, example.v, example.s + SHIFT)
        v2, s2 = _call(fn, shifted, f"combine with every LSE + {SHIFT}")
        _agree("shift", shifted, v2, s2, f"adding {SHIFT} to every LSE does not add {SHIFT} to s and leave v")


def run_combine_checks(fn: CombineFn, example: CombineInput, *, checks: tuple[str, ...] = COMBINE_CHECKS) -> None:
    """Run the selected checks on one example (:func:`~fuzz.merge.checks.run_op_checks`); raise the first
    :class:`~fuzz.merge.checks.MergeFailure` (or the ``ImplError`` of a call that raised, or
    ``Unsupported``: see :func:`~fuzz.merge.checks.invoke`)."""
    run_op_checks(fn, example, checks, what="combine(v, s)", call=_call, agree=_agree, metamorphic=_metamorphic,
                  metamorphic_checks=("permute", "empty_split", "shift"))
