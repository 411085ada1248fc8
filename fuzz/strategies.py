"""Hypothesis strategies for row-wise LogSumExp inputs, usable in your own ``@given`` tests.

    from hypothesis import given
    from fuzz.strategies import lse_inputs

    @given(lse_inputs(contract="finite", max_elements=4096))
    def test_my_lse(example):
        out = my_lse(example.x)          # example.x: the (possibly strided) input view
        ...                              # example.values: the same values, contiguous, on the CPU

Building blocks, each a strategy you can use alone: :func:`dtypes`, :func:`shapes`,
:func:`layouts`, :func:`row_recipes`; :func:`lse_inputs` composes them.

Row values are not drawn element by element: each row follows a *recipe* (:mod:`fuzz.recipes`,
re-exported here: :data:`RECIPES`, :func:`row_values`) with an intensity ``level``. Rows
cycle through up to six drawn recipes, so one launch carries many edge cases; shrinking drives the
recipe list towards a single ``zeros`` recipe, the shape towards (1, 1), the layout towards
contiguous and the dtype towards float32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from hypothesis import strategies as st

from reference.errors import InvalidArgument

from .batching import BatchLayout, batch_layouts
from .contract import DTYPES, Contract
from .layouts import COLUMN_STEPS, HUGE_KINDS, Layout, LayoutKind
from .lse_input import LseInput
from .recipes import LEVELS, RECIPES, Generator, Recipe, RowSpec, row_recipes, row_values

__all__ = ["DTYPES", "LEVELS", "RECIPES", "BatchLayout", "Contract", "Generator", "LseInput", "Recipe", "RowSpec",
           "default_device", "default_max_cols", "default_max_elements", "default_max_rows", "dtypes",
           "huge_examples", "layouts", "lse_inputs", "overflow_example", "padded_example", "row_recipes", "row_values", "shapes"]


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
_DEFAULT_MAX_COLS = 2**16 + 1
"""The longest row drawn by default, on every device (a larger ``max_elements`` given explicitly
reaches further): one past 2**16, so a one-program-per-row kernel (BLOCK the next power of two of
N) meets blocks up to 2**17 lanes. Its compile time grows with the block: on an H200, ptxas took
tens of seconds to minutes for 2**19 lanes and more, and each such block, drawn or visited while
shrinking, held a verdict for as long. The rows past 2**16 that matter (float16's overflow at
65520, bfloat16's lost units) lie under it; a GPU's larger element budget goes to more rows."""
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


def default_max_cols(max_elements: int | None = None) -> int:
    """Longest row drawn: :data:`_DEFAULT_MAX_COLS`, or an explicit ``max_elements`` (one row of all of them)."""
    return _DEFAULT_MAX_COLS if max_elements is None else max_elements


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
# Whole inputs


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
    :func:`default_max_elements` and :func:`default_max_rows`; N is at most the contract's ``max_n``
    and :func:`default_max_cols` (2**16 + 1 unless ``max_elements`` is given).
    ``dtype``, ``shape`` and ``layout`` replace the default sub-strategies (e.g.
    ``dtype=st.just(torch.float16)``). ``huge_offsets``: see :func:`layouts`.

    With none of ``max_elements``, ``dtype``, ``shape`` and ``layout`` given, one input in
    :data:`_WIDE_ONE_IN` (64 on the CPU, 24 on a GPU) is a single wide constant float16 or bfloat16
    row, past the element cap (:func:`_wide_constant_rows`); the runner adds :func:`overflow_example`.
    With the default shapes, one input in :data:`_NO_COLUMNS_ONE_IN` (16) that has rows has no
    columns (:func:`_no_columns`).

    Under an N-D call convention (``contract.call``, see :mod:`fuzz.calls`) each (M, N) example is
    laid out as an N-D input (:func:`fuzz.batching.batch_layouts`) instead of a 2-D layout; huge
    offsets stay with 2-D inputs, and a 1-D input has one row.
    """
    contract = Contract.parse(contract)
    device = default_device() if device is None else torch.device(device)
    # Wide constant rows join the default draws only: a caller who caps the elements or picks the
    # dtype, shape or layout gets exactly what was asked for.
    default = max_elements is None and dtype is None and shape is None and layout is None
    max_cols = default_max_cols(max_elements)
    max_cols = max_cols if contract.max_n is None else min(contract.max_n, max_cols)
    if max_elements is None:
        max_elements = default_max_elements(device)
    max_elements = _positive_int("max_elements", max_elements)
    if max_rows is None:
        max_rows = default_max_rows(device)
    # A huge-offset view spans 2**32 elements of (unbacked) address space: 4-byte elements at most.
    huge_dtype = next((d for d in contract.dtypes if d.itemsize <= 4), None)
    huge_offsets = huge_offsets and huge_dtype is not None
    dtype_strategy = dtypes(contract.dtypes) if dtype is None else dtype
    shape_strategy = shapes(max_elements=max_elements, max_rows=max_rows, max_cols=max_cols) \
        if shape is None else shape
    layout_strategy = layouts(huge_offsets=huge_offsets, kinds=contract.layouts.kinds) if layout is None else layout
    specs_strategy = row_recipes(contract=contract)
    if not contract.call.is_default:
        return _nd_inputs(contract, device, dtype_strategy, shape_strategy, specs_strategy, shape is None)

    wide = _wide_constant_rows(contract, device) if default else None
    empty_rows = shape is None  # a caller's own shapes are left as drawn
    one_in = _WIDE_ONE_IN["cpu" if device.type == "cpu" else "cuda"]

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
        if wide is not None and seed % one_in == one_in - 1:
            # Decided by the seed already drawn, not by a draw of its own: every other example,
            # and the plans drawn after it, stay what they were for a given --seed.
            return wide(seed)
        if empty_rows and not chosen_layout.is_huge and _no_columns(rows, seed):
            cols = 0
        # Built on first use: a share of a run skips the other shares' examples unbuilt. A huge view
        # on a GPU is built only when the example runs, under the runner's GPU memory slots (fuzz.runner).
        return LseInput.drawn(specs, (rows, cols), chosen_dtype, seed, chosen_layout, device,
                              view_on_use=chosen_layout.is_huge and device.type == "cuda")

    return draw_input()


_NO_COLUMNS_ONE_IN = 16
"""One input in this many with rows has no columns (M > 0, N = 0): each row an empty sum, whose
LSE is -inf, the launcher path that "nothing to do" guards get wrong (see
mutants/empty_rows_wrong_shape.py). The shape draws alone give N = 0 late: that mutant survived 4
of 20 seeds' CPU checks of 200 examples without this, none with it."""


def _no_columns(rows: int, seed: int) -> bool:
    """Whether an input of ``rows`` rows drawn with ``seed`` drops its columns: decided by the seed
    already drawn, not by a draw of its own, so the other examples of a given --seed stay what they
    were. By its low bits, which are never those of a wide row (seed % 64 == 63, seed % 24 == 23)
    and which a smaller seed can keep, so an M x 0 failure still shrinks to 1 x 0."""
    return rows > 0 and seed % _NO_COLUMNS_ONE_IN == _NO_COLUMNS_ONE_IN - 2


_WIDE_COLS = (65504, 65519, 65520, 65535, 65536)
"""Row lengths around float16's largest finite value (65504; 65520 rounds to inf): a kernel that
stores a float16 or bfloat16 row's sum of exp(x - max), which lies in [1, N], in the input's dtype
overflows to inf on a constant row of 65520 or more (torch.logsumexp does; see
docs/bugs-found.md), and bfloat16's 8 bits lose whole units of such a sum. Longer rows add
nothing to these bugs and cost a whole-row kernel a compile of a larger block on a GPU."""
_WIDE_ONE_IN = {"cpu": 64, "cuda": 24}
"""One input in this many is one wide constant row, past the element cap: rarer in Triton's
interpreter, where such a row costs about a second per call (a 100-example run of reference.lse on
the 2-core CPU machine took about 30% more CPU time with one in 24 and rows up to 262144, about
12% with one in 64 and rows of at most 65536)."""
_OVERFLOW_COLS = 65520  # float16's sum of N ones rounds to inf from here (65504 + half an ulp)


def _wide_constant_rows(contract: Contract, device: torch.device) -> Callable[[int], LseInput] | None:
    """``seed -> `` one contiguous float16 or bfloat16 row of N in :data:`_WIDE_COLS` equal values,
    where lse(c * ones(N)) = c + log N exactly (the dtype, N and c's level derived from ``seed``):
    drawn on every device, past ``max_elements``. None where the contract has no 16-bit dtype or
    caps N below."""
    halves = [d for d in contract.dtypes if d in (torch.float16, torch.bfloat16)]
    cols = [n for n in _WIDE_COLS if contract.max_n is None or n <= contract.max_n]
    if not halves or not cols:
        return None

    def wide(seed: int) -> LseInput:
        picks = seed // 64  # the rest of the seed picks the dtype, N and c's level
        chosen_dtype = halves[picks % len(halves)]
        n = cols[(picks // len(halves)) % len(cols)]
        return _constant_row(chosen_dtype, n, (picks // (len(halves) * len(cols))) % LEVELS, seed, device)

    return wide


def _constant_row(dtype: torch.dtype, cols: int, level: int, seed: int, device: torch.device) -> LseInput:
    specs = (RowSpec("constant", level),)
    return LseInput.drawn(specs, (1, cols), dtype, seed, Layout(), device)


def overflow_example(contract: Contract | str = Contract.STRICT,
                     device: torch.device | str | None = None) -> LseInput | None:
    """One contiguous row of :data:`_OVERFLOW_COLS` equal float16 values (the shortest constant row
    whose float16 sum of exp(x - max) overflows to inf), or None where the contract has no float16,
    caps N below it or declares an N-D call. The runner runs it in every run of default shapes,
    besides the drawn examples: a kernel that keeps that sum in float16 (torch.logsumexp does) fails
    on every seed, not on the one in a few hundred examples that draws such a row."""
    contract = Contract.parse(contract)
    device = default_device() if device is None else torch.device(device)
    if torch.float16 not in contract.dtypes or not contract.call.is_default:
        return None
    if contract.max_n is not None and contract.max_n < _OVERFLOW_COLS:
        return None
    return _constant_row(torch.float16, _OVERFLOW_COLS, 0, 0, device)


def padded_example(contract: Contract | str = Contract.STRICT,
                   device: torch.device | str | None = None) -> LseInput | None:
    """3 x 5 rows of standard normal values, each row followed by 3 elements of padding the call
    must not touch; None where the contract excludes padded rows or declares an N-D call. The
    runner runs it in every run: a call that writes past a row's end into the caller's padding
    fails ``input_unchanged`` on every seed, not on those whose draws include a padded layout."""
    contract = Contract.parse(contract)
    if LayoutKind.PADDED not in contract.layouts.kinds or not contract.call.is_default:
        return None
    if contract.max_n is not None and contract.max_n < 5:
        return None
    dtype = next((d for d in contract.dtypes if d.itemsize <= 4), contract.dtypes[0])
    specs, layout = (RowSpec("small", 0),), Layout(LayoutKind.PADDED, pad=3)
    return LseInput.drawn(specs, (3, 5), dtype, 3, layout, default_device() if device is None else device)


def huge_examples(contract: Contract | str = Contract.STRICT,
                  device: torch.device | str | None = None) -> list[LseInput]:
    """Two small views whose last element lies 2**31 elements past their first: 3 x 4 at a row
    stride of 2**30 and 2 x 3 at a column stride of 2**30, rows of standard normal values (not
    zeros: a read that wraps lands on untouched zeros, which a row of zeros would not tell from its
    own). The runner runs those the contract admits (huge offsets on, a 32-bit dtype, no N-D call)
    after the drawn examples: a kernel whose row or column offsets are 32-bit fails on every seed,
    on the CPU by ``memory_bounds`` at the wrapped read, on a GPU by a value check and then the
    memory phase, not on the seeds whose few hundred examples draw such a view. Built on first use."""
    contract = Contract.parse(contract)
    device = default_device() if device is None else torch.device(device)
    dtype = next((d for d in contract.dtypes if d.itemsize <= 4), None)
    if dtype is None or not contract.call.is_default:
        return []
    found = []
    for kind, rows, cols, seed in ((LayoutKind.HUGE_OFFSET, 3, 4, 1), (LayoutKind.HUGE_COLUMN_STRIDE, 2, 3, 2)):
        if kind in contract.layouts.kinds and (contract.max_n is None or contract.max_n >= cols):
            specs = (RowSpec("small", 0),)
            values = row_values(specs, rows, cols, dtype, seed)
            found.append(LseInput(values=values, layout=Layout(kind), specs=specs, seed=seed, device=device))
    return found


def _nd_inputs(contract: Contract, device: torch.device, dtype_strategy, shape_strategy,
               specs_strategy, empty_rows: bool) -> st.SearchStrategy[LseInput]:
    """Inputs under an N-D call convention: the 2-D draws, laid out by a batch layout
    (``empty_rows``: some drop their columns, as :func:`lse_inputs` does)."""
    call = contract.call

    @st.composite
    def draw_input(draw: st.DrawFn) -> LseInput:
        chosen_dtype = draw(dtype_strategy)
        rows, cols = draw(shape_strategy)
        if call.ndim == 1:
            rows = 1  # no batch dim: one row
        batch = draw(batch_layouts(rows, call.ndim, call.reduced, contract.layouts))
        specs = tuple(draw(st.lists(specs_strategy, min_size=1, max_size=max(1, min(rows, 6)))))
        seed = draw(st.integers(0, 2**32 - 1))
        if empty_rows and _no_columns(rows, seed):
            cols = 0
        values = row_values(specs, rows, cols, chosen_dtype, seed)
        return LseInput(x=batch.materialize(values, device), values=values, specs=specs, seed=seed, batch=batch)

    return draw_input()
