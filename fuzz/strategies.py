"""Hypothesis strategies for row-wise LogSumExp inputs, usable in your own ``@given`` tests.

    from hypothesis import given
    from fuzz.strategies import lse_inputs

    @given(lse_inputs(contract="finite", max_elements=4096))
    def test_my_lse(example):
        out = my_lse(example.x)          # example.x: the (possibly strided) input view
        ...                              # example.values: the same values, contiguous, on the CPU

Building blocks, each a strategy you can use alone: :func:`dtypes`, :func:`shapes`,
:func:`layouts`, :func:`row_recipes`; :func:`lse_inputs` composes them.

Row values are not drawn element by element (far too slow for 65536-element inputs). Each row
follows a *recipe* (:data:`RECIPES`: constant rows, one dominant element, all -inf, NaN, ...)
with an intensity ``level``, and its numbers come from numpy seeded by one drawn integer. Rows
cycle through up to six drawn recipes, so one launch carries many edge cases; shrinking drives the
recipe list towards a single ``zeros`` recipe, the shape towards (1, 1), the layout towards
contiguous and the dtype towards float32.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import strategies as st

from reference.errors import InvalidArgument

from .contract import DTYPES, Contract, Values
from .layouts import COLUMN_STEPS, HUGE_KINDS, Layout, LayoutKind

__all__ = ["DTYPES", "LEVELS", "RECIPES", "Contract", "Generator", "LseInput", "Recipe", "RowSpec", "default_device",
           "default_max_elements", "default_max_rows", "dtypes", "layouts", "lse_inputs", "row_recipes",
           "row_values", "shapes"]


# Powers of two and their neighbours are where tiles and rows-per-program counts break; the other
# entries are primes and counts that no power of two divides.
_ROW_COUNTS = (1, 0, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 32, 33, 63, 65, 127, 129, 255, 257,
               511, 513, 1023, 1025, 2049, 4097, 65537)
_COL_COUNTS = (1, 0, 2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 31, 32, 33, 61, 63, 64, 65, 127, 128, 129,
               255, 256, 257, 509, 511, 512, 513, 1021, 1023, 1024, 1025, 2047, 2048, 2049, 4093,
               4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65521,
               65535, 65536, 65537, 131071, 131072, 131073, 262147, 524287, 1048577, 4194305)

_GRID_MIN_ROWS = 257
_GRID_MIN_COLS = 4097  # one column past a 4096-column tile
_GRID_MAX_COLS = 16385
_GRID_COLS = (4097, 8191, 8193, 12289, 16385)

_CPU_MAX_ELEMENTS = 2**16  # Triton's interpreter runs each program in numpy: keep launches cheap
_CUDA_MAX_ELEMENTS = 2**22  # generation and the float64 oracle run on the host: keep each example well under a second
# In Triton's interpreter every program instance costs milliseconds of Python (1.3 ms for a minimal
# one-program-per-row kernel on a 2-core machine, 8 ms for one with 25 operations a tile), so the
# number of rows is the grid, and the cost, of the most common kernel design. Rows stay few on the
# CPU: seven examples in eight have at most 33 (see shapes), none more than 72 (65, one past 64, is
# the last listed count; at 160 rows one such kernel took 87 s for 200 examples, at 72 rows 44 s).
# Every other dimension keeps its full range.
_CPU_MAX_ROWS = 72
_FEW_ROWS = 33  # most examples have at most this many rows (see shapes)


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def default_max_elements(device: torch.device | str | None = None) -> int:
    """Largest M * N drawn by default: 2**16 on the CPU (interpreted kernels), 2**22 on a GPU."""
    device = default_device() if device is None else torch.device(device)
    return _CUDA_MAX_ELEMENTS if device.type == "cuda" else _CPU_MAX_ELEMENTS


def default_max_rows(device: torch.device | str | None = None) -> int | None:
    """Largest M drawn by default: 72 on the CPU (the interpreter's grid cost), no cap on a GPU."""
    device = default_device() if device is None else torch.device(device)
    return None if device.type == "cuda" else _CPU_MAX_ROWS


def _positive_int(name: str, value: object, low: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise InvalidArgument(f"{name}={value!r}; expected an int >= {low}.")
    return value


def _interesting_then_any(interesting: Sequence[int], limit: int) -> st.SearchStrategy[int]:
    """Over-represent the listed counts, but reach every count up to ``limit``.

    one_of shrinks towards its first branch and sampled_from towards its first element, so a
    failing count shrinks to the earliest listed one that still fails.
    """
    listed = [n for n in interesting if n <= limit]
    return st.one_of(st.sampled_from(listed), st.integers(0, limit))


def dtypes(allowed: tuple[torch.dtype, ...] = DTYPES) -> st.SearchStrategy[torch.dtype]:
    """float32, float16, bfloat16, float64 (shrinks to float32), or the ``allowed`` ones in that order."""
    return st.sampled_from([dtype for dtype in DTYPES if dtype in allowed])


def _log_uniform(limit: int) -> st.SearchStrategy[int]:
    """0..limit with every power-of-two range equally likely: small counts often, the limit sometimes."""
    return st.integers(0, max(limit, 1).bit_length()).flatmap(lambda k: st.integers(0, min(limit, 2**k)))


def shapes(*, max_elements: int = _CPU_MAX_ELEMENTS, max_rows: int | None = None,
           max_cols: int | None = None) -> st.SearchStrategy[tuple[int, int]]:
    """(M, N) with M * N <= max_elements, M <= max_rows, N <= max_cols; M and N start at 0.

    Over-represents 1, 2, 3, primes, 2**k - 1, 2**k and 2**k + 1: rows just past one tile and
    row counts that are no multiple of common rows-per-program counts. N reaches max_elements
    (one very long row) unless ``max_cols`` (a declared contract's largest N) caps it; M reaches
    ``max_rows`` (default: max_elements), drawn log-uniformly besides the listed counts so that a
    one-program-per-row kernel's grid (in an interpreter, its cost) stays mostly small: one
    example in four draws its rows from the whole range, one in eight when ``max_rows`` is given
    (the CPU default gives it); the others have at most 33.

    When the budget allows it (a GPU's), one example in eight is a grid of long rows: more than
    256 rows of 4097 to 16385 columns. A GPU kernel typically splits a long row across programs
    only when there are too few rows to fill the machine, so its loop over tiles (and every bug
    in it) runs only on inputs that have both many rows and rows of several tiles, which the
    independent draws of M and N above almost never combine.
    """
    max_elements = _positive_int("max_elements", max_elements)
    capped = max_rows is not None
    max_rows = max_elements if max_rows is None else _positive_int("max_rows", max_rows)
    max_rows = min(max_rows, max_elements)
    max_cols = max_elements if max_cols is None else min(_positive_int("max_cols", max_cols), max_elements)
    grid_max_cols = min(_GRID_MAX_COLS, max_elements // _GRID_MIN_ROWS, max_cols)
    # Widest grid row that still leaves room for the fewest grid rows (>= _GRID_MIN_COLS when grid).
    grid = min(max_rows, max_elements // _GRID_MIN_COLS) >= _GRID_MIN_ROWS and grid_max_cols >= _GRID_MIN_COLS
    small_rows = [n for n in _ROW_COUNTS if n <= min(max_rows, _FEW_ROWS)]
    large_rows = [n for n in _ROW_COUNTS if _FEW_ROWS < n <= max_rows]

    @st.composite
    def draw_shape(draw: st.DrawFn) -> tuple[int, int]:
        # Drawn only where a grid fits (not within the CPU default of 2**16 elements).
        if grid and draw(st.integers(0, 7)) == 7:
            cols = draw(st.one_of(st.sampled_from([c for c in _GRID_COLS if c <= grid_max_cols]),
                                  st.integers(_GRID_MIN_COLS, grid_max_cols)))
            return draw(st.integers(_GRID_MIN_ROWS, min(max_rows, max_elements // cols))), cols
        # Mostly few rows (the grid of a one-program-per-row kernel is its cost in an interpreter),
        # sometimes the listed counts past a power of two, sometimes any count up to the limit:
        # one in four examples, one in eight where rows are capped (an interpreter's budget).
        sides = 8 if capped else 16
        branch = draw(st.integers(0, sides - 1))
        if branch < sides - 2:
            rows = draw(st.sampled_from(small_rows))
        elif branch == sides - 2:
            rows = draw(_log_uniform(max_rows))
        else:
            rows = draw(st.sampled_from(large_rows or small_rows))
        cols = draw(_interesting_then_any(_COL_COUNTS, min(max_cols, max_elements // max(rows, 1))))
        return rows, cols

    return draw_shape()


def layouts(*, huge_offsets: bool = True, kinds: tuple[LayoutKind, ...] | None = None) -> st.SearchStrategy[Layout]:
    """Contiguous, padded row stride, column-major, column step > 1, nonzero storage offset, and
    views whose elements lie >= 2**31 elements into the storage, through a huge row stride or a
    huge column stride (lazily allocated; see :class:`fuzz.layouts.Layout`) unless
    ``huge_offsets`` is False.

    ``kinds`` keeps only those layouts (a declared contract's, see :class:`fuzz.contract.Layouts`).
    A kernel with 32-bit index math may crash the process on a huge offset, so run candidates in an
    isolated process (``lse-fuzz check`` does).
    """
    allowed = tuple(LayoutKind) if kinds is None else kinds
    kinds = [kind for kind in LayoutKind if kind in allowed and (huge_offsets or kind not in HUGE_KINDS)]
    if not kinds:
        raise InvalidArgument(f"kinds={allowed!r} leaves no layout to draw.")
    by_kind = {
        LayoutKind.CONTIGUOUS: st.just(Layout()),
        LayoutKind.PADDED: st.builds(Layout, kind=st.just(LayoutKind.PADDED), pad=st.integers(1, 67)),
        LayoutKind.TRANSPOSED: st.builds(Layout, kind=st.just(LayoutKind.TRANSPOSED), pad=st.integers(0, 5)),
        LayoutKind.COLUMN_STEP: st.builds(Layout, kind=st.just(LayoutKind.COLUMN_STEP),
                                          step=st.sampled_from(COLUMN_STEPS), pad=st.integers(0, 3)),
        LayoutKind.OFFSET: st.builds(Layout, kind=st.just(LayoutKind.OFFSET), offset=st.integers(1, 131)),
        LayoutKind.HUGE_OFFSET: st.builds(Layout, kind=st.just(LayoutKind.HUGE_OFFSET),
                                          pad=st.integers(0, 3), offset=st.integers(0, 7)),
        LayoutKind.HUGE_COLUMN_STRIDE: st.builds(Layout, kind=st.just(LayoutKind.HUGE_COLUMN_STRIDE),
                                                 pad=st.integers(0, 3), offset=st.integers(0, 7)),
    }
    # Every other kind twice, each huge kind once: they are there to expose 32-bit index math (row
    # and column offsets), which one example in a dozen of each does, and each spans gigabytes of
    # address space.
    weighted = [kind for kind in kinds if kind not in HUGE_KINDS for _ in range(2)]
    weighted += [kind for kind in kinds if kind in HUGE_KINDS]
    return st.sampled_from(weighted).flatmap(lambda kind: by_kind[kind])


# --------------------------------------------------------------------------------------------
# Row recipes


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


# --------------------------------------------------------------------------------------------
# Whole inputs


class LseInput:
    """One generated input: the view ``x`` a kernel gets, and how it was made.

    ``values`` holds the same numbers contiguously on the CPU (``x`` may be strided, offset, or on
    a GPU); ``layout.materialize(values, device)`` rebuilds ``x``. ``recipes[i]`` names row i's
    recipe. Given ``device`` instead of ``x``, the view is built on first use (a huge-offset view
    holds gigabytes on a GPU: it is built while the example runs and :meth:`release`-d after).
    """

    def __init__(self, x: torch.Tensor | None = None, values: torch.Tensor | None = None, layout: Layout = Layout(),
                 specs: tuple[RowSpec, ...] = (), seed: int = 0, *, device: torch.device | str | None = None) -> None:
        if values is None:
            raise InvalidArgument("values=None; an LseInput needs its values (a 2-D CPU tensor).")
        self._x = x
        self.values = values
        self.layout = layout
        self.specs = specs
        self.seed = seed
        self.device = torch.device(device) if device is not None else (x.device if x is not None else values.device)

    @property
    def x(self) -> torch.Tensor:
        if self._x is None:
            self._x = self.layout.materialize(self.values, self.device)
        return self._x

    @x.setter
    def x(self, value: torch.Tensor) -> None:
        self._x = value

    def release(self) -> None:
        """Drop the view if it is built lazily again on use (its storage goes back to the allocator)."""
        self._x = None

    @property
    def dtype(self) -> torch.dtype:
        return self.values.dtype

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.values.shape)  # type: ignore[return-value]

    @property
    def recipes(self) -> list[str]:
        return [self.specs[i % len(self.specs)].recipe for i in range(self.shape[0])]

    def row_recipe(self, row: int) -> str:
        return str(self.specs[row % len(self.specs)])

    def describe(self) -> str:
        rows, cols = self.shape
        counts = Counter(self.row_recipe(i) for i in range(rows))
        mix = ", ".join(f"{n} x {name}" for name, n in counts.items()) or "no rows"
        layout = self.layout.describe(rows, cols)
        return f"{str(self.dtype).replace('torch.', '')} {tuple(self.shape)} {layout} on {self.device.type}; rows: {mix}"

    def __repr__(self) -> str:
        return f"<LseInput {self.describe()}>"

    def _repr_pretty_(self, printer, cycle) -> None:  # Hypothesis prints falsifying examples with this
        printer.text(repr(self))


def lse_inputs(
    *,
    contract: Contract | str = Contract.STRICT,
    device: torch.device | str | None = None,
    max_elements: int | None = None,
    max_rows: int | None = None,
    huge_offsets: bool = True,
    dtype: st.SearchStrategy[torch.dtype] | None = None,
    shape: st.SearchStrategy[tuple[int, int]] | None = None,
    layout: st.SearchStrategy[Layout] | None = None,
) -> st.SearchStrategy[LseInput]:
    """Complete inputs for a row-wise LSE implementation, inside ``contract`` (a
    :class:`fuzz.contract.Contract`, or "strict"/"finite").

    ``device`` defaults to CUDA when present; ``max_elements`` and ``max_rows`` to
    :func:`default_max_elements` and :func:`default_max_rows` (the contract's ``max_n`` caps N).
    ``dtype``, ``shape`` and ``layout`` replace the default sub-strategies (e.g.
    ``dtype=st.just(torch.float16)``). ``huge_offsets``: see :func:`layouts`.
    """
    contract = Contract.parse(contract)
    device = default_device() if device is None else torch.device(device)
    if max_elements is None:
        max_elements = default_max_elements(device)
    max_elements = _positive_int("max_elements", max_elements)
    if max_rows is None:
        max_rows = default_max_rows(device)
    # A huge-offset view spans 2**32 elements of (unbacked) address space: 4-byte elements at most.
    huge_dtype = next((d for d in contract.dtypes if d.itemsize <= 4), None)
    huge_offsets = huge_offsets and huge_dtype is not None
    dtype_strategy = dtypes(contract.dtypes) if dtype is None else dtype
    shape_strategy = shapes(max_elements=max_elements, max_rows=max_rows, max_cols=contract.max_n) \
        if shape is None else shape
    layout_strategy = layouts(huge_offsets=huge_offsets, kinds=contract.layouts.kinds) if layout is None else layout
    specs_strategy = row_recipes(contract=contract)

    @st.composite
    def draw_input(draw: st.DrawFn) -> LseInput:
        chosen_dtype = draw(dtype_strategy)
        rows, cols = draw(shape_strategy)
        chosen_layout = draw(layout_strategy)
        rows, cols = chosen_layout.fit(rows, cols, max_elements)
        if chosen_layout.is_huge and chosen_dtype.itemsize > 4:
            chosen_dtype = huge_dtype or torch.float32
        specs = tuple(draw(st.lists(specs_strategy, min_size=1, max_size=max(1, min(rows, 6)))))
        seed = draw(st.integers(0, 2**32 - 1))
        values = row_values(specs, rows, cols, chosen_dtype, seed)
        if chosen_layout.is_huge and device.type == "cuda":
            # Built when the example runs, under the runner's GPU memory slots (fuzz.runner).
            return LseInput(values=values, layout=chosen_layout, specs=specs, seed=seed, device=device)
        x = chosen_layout.materialize(values, device)
        return LseInput(x=x, values=values, layout=chosen_layout, specs=specs, seed=seed)

    return draw_input()
