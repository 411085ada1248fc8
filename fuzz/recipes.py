"""Row recipes: how the rows of an input are filled, each with an intensity level.

Row values are not drawn element by element (far too slow for 65536-element inputs). Each row
follows a *recipe* (:data:`RECIPES`: constant rows, one dominant element, all -inf, NaN, ...)
with an intensity ``level``, and its numbers come from numpy seeded by one drawn integer
(:func:`row_values`). :mod:`fuzz.strategies` composes them into whole inputs and re-exports them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import strategies as st

from reference.errors import InvalidArgument

from .contract import DTYPES, Contract, Values

__all__ = ["LEVELS", "RECIPES", "Generator", "Recipe", "RowSpec", "row_recipes", "row_values"]


@dataclass(frozen=True)
class _Limits:
    """What "near the limits" means for one input dtype."""

    max: float  # largest finite value
    tiny: float  # smallest normal value
    subnormal: float  # smallest subnormal value
    exp_overflow: float  # exp(x) overflows past this in the kernel's accumulation dtype

    @classmethod
    def of(cls, dtype: torch.dtype) -> _Limits:
        info = torch.finfo(dtype)
        # 16-bit inputs are accumulated in float32 by any sensible kernel; float64 may be either.
        exp_overflow = math.log(torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).max)
        return cls(max=info.max, tiny=info.tiny, subnormal=info.tiny * info.eps, exp_overflow=exp_overflow)


Generator = Callable[[np.random.Generator, int, int, _Limits, int], np.ndarray]


@dataclass(frozen=True)
class Recipe:
    """How to fill rows: ``generate(rng, rows, cols, limits, level)`` -> float64 (rows, cols)."""

    name: str
    summary: str
    generate: Generator
    finite: bool = True  # allowed under Contract.FINITE (no NaN, no +inf)


LEVELS = 8
"""Recipe levels run 0..LEVELS-1, mildest first (where shrinking goes)."""


def _by_level(options: Sequence[float], level: int) -> float:
    return options[min(level, len(options) - 1)]


def _normal(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return rng.standard_normal((rows, cols))


def _row_column(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """One random column index per row."""
    return rng.integers(0, cols, size=rows)


def _zeros(rng, rows, cols, limits, level):
    values = np.zeros((rows, cols))
    if level:  # signed zeros: a kernel that rewrites its input may turn -0.0 into +0.0
        values = np.copysign(values, rng.standard_normal((rows, cols)))
    return values


def _small(rng, rows, cols, limits, level):
    return _normal(rng, rows, cols) * 2.0 ** (level - 2)


def _scaled(rng, rows, cols, limits, level):
    exponents = rng.integers(-8 * level - 1, 8 * level + 2, size=(rows, 1))
    offsets = rng.choice([0.0, 1.0, -1.0, 100.0, -100.0, 1e4, -1e4, 1e6, -1e6, 1e12, -1e12, 1e30, -1e30][: 2 * level + 3],
                         size=(rows, 1))
    cap = limits.max / 4
    return np.clip(_normal(rng, rows, cols) * np.exp2(exponents) + np.clip(offsets, -cap, cap), -cap, cap)


def _constant(rng, rows, cols, limits, level):
    choices = [0.0, 1.0, -1.0, 3.5, 100.0, -1e4, 1e30, -1e30][: level + 2]
    constants = np.clip(rng.choice(choices, size=(rows, 1)), -limits.max / 4, limits.max / 4)
    return np.broadcast_to(constants, (rows, cols)).copy()


def _dominant(rng, rows, cols, limits, level):
    # The rest of the row sits `gap` below the maximum: exp(-gap) * N is below float32's epsilon
    # for gaps past ~17, the regime where log(1 + s) loses s and log1p is needed.
    gap = _by_level([1.0, 10.0, 16.0, 20.0, 30.0, 50.0, 100.0, 1000.0], level) * (1 + rng.random((rows, 1)))
    peak = rng.standard_normal((rows, 1)) * 10.0 * level
    values = peak - gap - np.abs(_normal(rng, rows, cols))
    values[np.arange(rows), _row_column(rng, rows, cols)] = peak[:, 0]
    return values


def _far_below_zero(rng, rows, cols, limits, level):
    depth = _by_level([20.0, 100.0, 1e3, 1e4, 1e6, 1e10, 1e20, 1e30], level) * (1 + rng.random((rows, 1)))
    depth = np.minimum(depth, limits.max * 0.9)
    return -depth + _normal(rng, rows, cols) * np.minimum(depth / 8, 10.0)


def _near_limit(rng, rows, cols, limits, level):
    magnitudes = limits.max * rng.uniform(0.5, 1.0, size=(rows, cols))
    if level % 2:  # both signs: x - max overflows to -inf for the negative entries
        return magnitudes * np.where(rng.random((rows, cols)) < 0.5, -1.0, 1.0)
    return magnitudes


def _near_exp_overflow(rng, rows, cols, limits, level):
    # exp(x) overflows past ~88.7 in float32 (~709.8 in float64): a kernel that skips the
    # max shift returns +inf here.
    center = limits.exp_overflow if level % 2 else math.log(torch.finfo(torch.float32).max)
    spread = _by_level([0.5, 0.5, 2.0, 2.0, 8.0], level)
    return np.minimum(center + _normal(rng, rows, cols) * spread, limits.max)


def _tiny(rng, rows, cols, limits, level):
    signs = np.where(rng.random((rows, cols)) < 0.5, -1.0, 1.0)
    if level % 2:  # just around the smallest normal number
        return signs * limits.tiny * rng.uniform(0.5, 4.0, size=(rows, cols))
    return signs * limits.subnormal * rng.integers(1, 64, size=(rows, cols))


def _near_zero_result(rng, rows, cols, limits, level):
    # N copies of -log N sum to exp(0): the result is 0 up to the noise, where only an absolute
    # error bound makes sense.
    noise = _normal(rng, rows, cols) * 2.0 ** -(4 * level + 4)
    return -math.log(max(cols, 1)) + noise


def _all_neg_inf(rng, rows, cols, limits, level):
    return np.full((rows, cols), -np.inf)


def _finite_mix(rng, rows, cols, limits, level):
    """Finite values of a moderate scale, sometimes far below zero (used under -inf masks)."""
    offsets = rng.choice([0.0, 10.0, -1e4][: level // 2 + 1], size=(rows, 1))
    return _normal(rng, rows, cols) * 3.0 + np.clip(offsets, -limits.max / 4, limits.max / 4)


def _partly_neg_inf(rng, rows, cols, limits, level):
    values = _finite_mix(rng, rows, cols, limits, level)
    masked = rng.random((rows, cols)) < _by_level([0.5, 0.1, 0.9, 0.99], level)
    masked[np.arange(rows), _row_column(rng, rows, cols)] = False  # at least one finite entry
    values[masked] = -np.inf
    return values


def _leading_neg_inf(rng, rows, cols, limits, level):
    # Whole tiles of -inf before the first finite value: the running max stays -inf for several
    # iterations, and -inf - (-inf) must not turn the row into NaN.
    values = _finite_mix(rng, rows, cols, limits, level)
    prefixes = [cols - 1, 1, 31, 32, 33, 1023, 1024, 1025, 2048, 4097, 16384, cols // 2]
    choices = [p for p in prefixes[: level + 5] if 0 < p < cols] or [0]
    lead = rng.choice(choices, size=rows)
    values[np.arange(cols)[None, :] < lead[:, None]] = -np.inf
    return values


def _ascending(rng, rows, cols, limits, level):
    # The running maximum grows at every tile, so an online kernel must rescale its sum each time.
    growth = min(_by_level([1.0, 10.0, 100.0, 1e3, 1e4, 1e6], level), limits.max / 4)
    ramp = np.linspace(-growth / 2, growth / 2, cols)
    return np.sort(_normal(rng, rows, cols), axis=1) + ramp


def _with_specials(rng, rows, cols, specials: Sequence[float], level: int) -> np.ndarray:
    values = _normal(rng, rows, cols) * 4.0
    chosen = rng.random((rows, cols)) < _by_level([0.0, 0.01, 0.1, 0.5, 1.0], level)
    chosen[np.arange(rows), _row_column(rng, rows, cols)] = True  # at least one per row
    values[chosen] = rng.choice(specials, size=int(chosen.sum()))
    return values


def _pos_inf(rng, rows, cols, limits, level):
    return _with_specials(rng, rows, cols, [np.inf], level)


def _pos_and_neg_inf(rng, rows, cols, limits, level):
    values = _with_specials(rng, rows, cols, [np.inf, -np.inf], level)
    values[np.arange(rows), _row_column(rng, rows, cols)] = np.inf  # at least one +inf
    return values


def _nan(rng, rows, cols, limits, level):
    return _with_specials(rng, rows, cols, [np.nan] + [np.inf, -np.inf] * (level % 2), level)


_RECIPE_LIST = (
    Recipe("zeros", "all zeros (signed zeros at level >= 1): lse = log N", _zeros),
    Recipe("small", "standard normal values", _small),
    Recipe("scaled", "normal values at scales 2**-57..2**57 and offsets up to 1e30", _scaled),
    Recipe("constant", "every entry equal: lse = c + log N", _constant),
    Recipe("dominant", "one entry far above the rest (log1p regime)", _dominant),
    Recipe("far_below_zero", "row maximum far below zero (naive exp underflows to 0)", _far_below_zero),
    Recipe("near_limit", "magnitudes within a factor 2 of the dtype's largest value", _near_limit),
    Recipe("near_exp_overflow", "values around 88.7 (709.8): naive exp overflows", _near_exp_overflow),
    Recipe("tiny", "subnormal and smallest-normal magnitudes", _tiny),
    Recipe("near_zero_result", "N entries near -log N: the result is close to 0", _near_zero_result),
    Recipe("all_neg_inf", "every entry -inf: lse = -inf", _all_neg_inf),
    Recipe("partly_neg_inf", "random entries -inf, at least one finite", _partly_neg_inf),
    Recipe("leading_neg_inf", "the first K entries -inf (whole tiles), then finite", _leading_neg_inf),
    Recipe("ascending", "sorted ascending with a growing maximum (online rescaling)", _ascending),
    Recipe("pos_inf", "some entries +inf: lse = +inf", _pos_inf, finite=False),
    Recipe("pos_and_neg_inf", "+inf and -inf in one row: lse = +inf", _pos_and_neg_inf, finite=False),
    Recipe("nan", "some entries NaN (with random payloads): lse = NaN", _nan, finite=False),
)
RECIPES: dict[str, Recipe] = {recipe.name: recipe for recipe in _RECIPE_LIST}
"""Every row recipe by name, mildest first."""


@dataclass(frozen=True)
class RowSpec:
    """A recipe name and its intensity level (0 = mildest)."""

    recipe: str
    level: int = 0

    def __post_init__(self) -> None:
        if self.recipe not in RECIPES:
            raise InvalidArgument(f"recipe={self.recipe!r} is unknown; use one of: {', '.join(RECIPES)}.")
        if not 0 <= self.level < LEVELS:
            raise InvalidArgument(f"level={self.level!r}; expected 0 <= level < {LEVELS}.")

    def __str__(self) -> str:
        return f"{self.recipe}/{self.level}" if self.level else self.recipe


def row_recipes(*, contract: Contract | str = Contract.STRICT) -> st.SearchStrategy[RowSpec]:
    """A recipe and level for a group of rows; under a finite contract no NaN or +inf recipe."""
    contract = Contract.parse(contract)
    names = [r.name for r in _RECIPE_LIST if r.finite or contract.values is Values.STRICT]
    return st.builds(RowSpec, recipe=st.sampled_from(names), level=st.integers(0, LEVELS - 1))


_NAN_BITS = {  # (int dtype, exponent+quiet bits, payload mask): quiet NaNs with varied payloads
    torch.float16: (torch.int16, 0x7E00, 0x01FF),
    torch.bfloat16: (torch.int16, 0x7FC0, 0x003F),
    torch.float32: (torch.int32, 0x7FC00000, 0x003FFFFF),
    torch.float64: (torch.int64, 0x7FF8000000000000, 0x0007FFFFFFFFFFFF),
}


def _vary_nan_payloads(values: torch.Tensor, rng: np.random.Generator) -> None:
    """Give every NaN a random sign and payload, so 'input unchanged' compares more than one pattern."""
    nan = torch.isnan(values)
    count = int(torch.count_nonzero(nan))  # a bool sum widens every element to int64: 4x slower
    if not count:
        return
    int_dtype, quiet, payload_mask = _NAN_BITS[values.dtype]
    payload = torch.from_numpy(rng.integers(0, payload_mask + 1, size=count, dtype=np.int64))
    sign = torch.from_numpy(rng.random(count) < 0.5)
    # OR-ing with the most negative integer sets exactly the sign bit (two's complement).
    bits = torch.where(sign, (payload | quiet) | torch.iinfo(int_dtype).min, payload | quiet)
    values.view(int_dtype)[nan] = bits.to(int_dtype)


def row_values(specs: Sequence[RowSpec], rows: int, cols: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """The (rows, cols) CPU tensor of ``dtype`` that ``specs`` and ``seed`` describe.

    Row i follows ``specs[i % len(specs)]``. Values are generated in float64, clipped to the
    dtype's finite range (so rounding never creates an infinity the recipe did not ask for) and
    rounded once to ``dtype``.
    """
    if not specs:
        raise InvalidArgument("specs=[]; expected at least one RowSpec.")
    if dtype not in _NAN_BITS:
        raise InvalidArgument(f"dtype={dtype!r}; expected one of {', '.join(map(str, DTYPES))}.")
    limits = _Limits.of(dtype)
    values = np.zeros((rows, cols))
    if rows and cols:
        for index, spec in enumerate(specs):
            group = np.arange(index, rows, len(specs))
            if not len(group):
                continue
            rng = np.random.default_rng([seed, index])
            generated = RECIPES[spec.recipe].generate(rng, len(group), cols, limits, spec.level)
            finite = np.isfinite(generated)
            generated[finite] = np.clip(generated[finite], -limits.max, limits.max)
            values[group] = generated
    tensor = torch.from_numpy(values).to(dtype)
    _vary_nan_payloads(tensor, np.random.default_rng([seed, len(specs)]))
    return tensor
