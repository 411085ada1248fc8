"""Metamorphic checks: a transformed input whose answer follows from the first call's.

Each compares two outputs of the candidate, so each side may carry the full tolerance of the
float64 oracle's error model: a pair is consistent when ``|(g2 - g1) - (e2 - e1)| <= bound1 +
bound2``, where e1, e2 are the oracle's values for the two inputs. When x + c is exact, e2 - e1 is
c; when rounding moved x + c, the oracle accounts for it, so a correct implementation can never
be flagged. One metamorphic check is drawn per example (the plan).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from reference import compare

from ..failures import CheckFailure, format_number
from ..strategies import LseInput
from .context import Context, Impl, bits, rows_of


def _inconsistent(g1, e1, b1, m1, g2, e2, b2, m2) -> torch.Tensor:
    """Rows where the pair (g1, g2) breaks the relation the oracle pair (e1, e2) obeys.

    ``b1``, ``b2`` are each side's allowance (any accepted finite output lies within it of the
    oracle); ``m1``, ``m2`` each side's own mismatch. A side that is legitimately infinite (a
    finite oracle value beyond the output dtype's range) cannot enter a difference: such rows are
    judged by each side's own acceptance interval instead.
    """
    finite = torch.isfinite(e1) & torch.isfinite(e2)
    comparable = finite & torch.isfinite(g1) & torch.isfinite(g2)
    # float64 rounding of the differences themselves, far below any bound
    slack = 8 * 2.0**-53 * (g1.abs() + g2.abs() + e1.abs() + e2.abs()).nan_to_num(0.0, 0.0, 0.0)
    drift = ((g2 - g1) - (e2 - e1)).abs()
    close = drift <= b1 + b2 + slack  # False where anything is NaN or inf
    same = (g1 == g2) | (torch.isnan(g1) & torch.isnan(g2))
    both_special = ~torch.isfinite(e1) & (torch.isnan(e1) & torch.isnan(e2) | (e1 == e2))
    return torch.where(comparable, ~close, torch.where(finite, m1 | m2, both_special & ~same))


def _metamorphic(
    check: str,
    example: LseInput,
    ctx: Context,
    *,
    pick: slice | torch.Tensor | None,
    values: torch.Tensor,
    x: torch.Tensor,
    relation: str,
    call: str,
    row_details: Callable[[int], list[str]],
) -> None:
    """Call on ``x`` (holding ``values``) and judge it against rows ``pick`` of the first call."""
    ctx.comparison(check)  # the first output must be comparable before anything else
    out = rows_of(check, ctx.call(x, call), values.shape[0], example.x.device)
    _judge_pair(check, ctx, pick=pick, values=values, out=out, relation=relation, row_details=row_details)


def _judge_pair(check, ctx, *, pick, values, out, relation, row_details, extra: Sequence[str] = ()) -> None:
    """Fail ``check`` where ``out`` (for ``values``) breaks the oracle's relation to rows ``pick``."""
    first = ctx.comparison(check)
    rows = values.shape[0]
    second = compare(ctx.on_device(values), out, base=ctx.contract.lse_base)
    pick = slice(None) if pick is None else pick
    g1, e1, b1, m1 = first.got[pick], first.expected[pick], first.bound[pick], first.mismatch[pick]
    bad = _inconsistent(g1, e1, b1, m1, second.got, second.expected, second.bound, second.mismatch)
    if not bad.any():
        return
    row = int(torch.nonzero(bad)[0])
    if not (math.isfinite(float(g1[row])) and math.isfinite(float(second.got[row]))) \
            and math.isfinite(float(e1[row])) and math.isfinite(float(second.expected[row])):
        # An infinite side: the relation cannot be judged by differences, each side by its own interval.
        first_row = int(torch.arange(len(first.got))[pick][row])
        raise CheckFailure(
            check, f"row {row}: {relation} (a side is outside its own acceptance interval)", row=row,
            expected=float(second.expected[row]), got=float(second.got[row]), mismatches=int(bad.sum()), rows=rows,
            details=[f"first call:  {format_number(float(g1[row]))}: {first.explain(first_row)}",
                     f"second call: {format_number(float(second.got[row]))}: {second.explain(row)}",
                     *row_details(row), *extra])
    expected = float(g1[row] + (second.expected[row] - e1[row]))
    raise CheckFailure(
        check,
        f"row {row}: {relation}",
        row=row,
        expected=expected if math.isfinite(float(e1[row])) else float(g1[row]),
        got=float(second.got[row]),
        bound=float(b1[row] + second.bound[row]),
        mismatches=int(bad.sum()),
        rows=rows,
        details=[
            f"first call:  {format_number(float(g1[row]))} (reference {format_number(float(e1[row]))})",
            f"second call: {format_number(float(second.got[row]))} (reference {format_number(float(second.expected[row]))})",
            *row_details(row),
            *extra,
            "the expected value is the first call's answer moved by the reference's own difference; "
            "the allowance is the sum of both calls' tolerances",
        ],
    )


def _shift_amounts(values: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """A power of two per row near the row's largest finite magnitude, signed towards zero."""
    v = values.to(torch.float64)
    finite = torch.isfinite(v)
    magnitude = torch.where(finite, v.abs(), torch.zeros_like(v)).amax(dim=1) if v.shape[1] else torch.zeros(v.shape[0])
    exponent = torch.floor(torch.log2(magnitude.clamp_min(1.0)))
    jitter = torch.from_numpy(rng.integers(-3, 1, size=v.shape[0])).to(torch.float64)
    amount = torch.exp2((exponent + jitter).clamp_min(0.0))
    row_max = torch.where(finite, v, torch.full_like(v, -math.inf)).amax(dim=1) if v.shape[1] else torch.zeros(v.shape[0])
    sign = torch.where(row_max > 0, -1.0, 1.0).to(torch.float64)
    return amount * sign


def check_shift_invariance(impl: Impl, example: LseInput, ctx: Context) -> None:
    values = example.values
    c = _shift_amounts(values, ctx.rng("shift_invariance"))
    shifted64 = values.to(torch.float64) + c[:, None]
    shifted = shifted64.to(values.dtype)
    # A shift that rounds a finite entry to infinity changes the answer's kind; leave such rows alone.
    overflow = (torch.isfinite(values) & ~torch.isfinite(shifted)).any(dim=1)
    c = torch.where(overflow, torch.zeros_like(c), c)
    shifted = (values.to(torch.float64) + c[:, None]).to(values.dtype)
    x = example.rebuild(shifted, example.x.device)
    _metamorphic(
        "shift_invariance", example, ctx, pick=None, values=shifted, x=x,
        relation="lse(x + c) != lse(x) + c" if ctx.contract.lse_base == "e" else "lse2(x + c) != lse2(x) + c log2(e)",
        call="the call on x + c (shift_invariance)",
        row_details=lambda row: [f"shift:       c = {float(c[row])!r} added to every entry of row {row} "
                                 f"(recipe {example.row_recipe(row)})"],
    )


def check_permutation_invariance(impl: Impl, example: LseInput, ctx: Context) -> None:
    values = example.values
    rows, cols = values.shape
    rng = ctx.rng("permutation_invariance")
    mode = int(rng.integers(0, 3))
    if mode == 0:
        order = torch.from_numpy(np.argsort(rng.random((rows, cols)), axis=1))
        how = "entries shuffled within each row"
    elif mode == 1:
        order = torch.arange(cols - 1, -1, -1).expand(rows, cols)
        how = "each row reversed"
    else:
        shift = int(rng.integers(1, max(cols, 2)))
        order = (torch.arange(cols) + shift).remainder(max(cols, 1)).expand(rows, cols)
        how = f"each row rotated by {shift}"
    permuted = values.gather(1, order.to(torch.int64)) if cols else values.clone()
    x = example.rebuild(permuted, example.x.device)
    _metamorphic(
        "permutation_invariance", example, ctx, pick=None, values=permuted, x=x,
        relation="lse of a permuted row differs from lse of the row",
        call="the call on permuted rows (permutation_invariance)",
        row_details=lambda row: [f"permutation: {how} (row {row} recipe {example.row_recipe(row)})"],
    )


def check_row_independence(impl: Impl, example: LseInput, ctx: Context) -> None:
    rows = example.shape[0]
    if rows == 0:
        return
    rng = ctx.rng("row_independence")
    if example.batch is not None:
        start, stop, x, form = _batch_slice(example, rng)
        if x is None:
            return
    else:
        start = int(rng.integers(0, rows))
        stop = start + 1 if rng.random() < 0.5 else int(rng.integers(start + 1, rows + 1))
        as_view = bool(rng.random() < 0.5) and not example.layout.is_huge
        # A view keeps the batch's strides and moves the storage offset; a fresh contiguous copy
        # changes the launch (fewer rows, other tiles) but not the answer.
        x = example.x[start:stop] if as_view else example.values[start:stop].to(example.x.device).clone()
        form = "a view of the batch" if as_view else "a contiguous copy"
    values = example.values[start:stop]
    _metamorphic(
        "row_independence", example, ctx, pick=slice(start, stop), values=values, x=x,
        relation=f"rows {start}:{stop} alone give a different answer than inside the batch",
        call=f"the call on rows {start}:{stop} alone (row_independence)",
        row_details=lambda row: [f"rows:        x[{start}:{stop}] passed alone as {form}; "
                                 f"this is batch row {start + row} (recipe {example.row_recipe(start + row)})"],
    )


def _batch_slice(example: LseInput, rng: np.random.Generator):
    """(start, stop, x, form) for an N-D input: entries of its first batch dim, whose rows are
    consecutive, as a view of the input (its strides kept) or a contiguous copy; x None when the
    input has no batch dim to slice (a 1-D input: its one row is the batch)."""
    batch = example.batch
    dim = batch.leading()
    if dim is None:
        return 0, 0, None, ""
    entries, per_entry = batch.batch[0], batch.rows // max(batch.batch[0], 1)
    first = int(rng.integers(0, entries))
    last = first + 1 if rng.random() < 0.5 else int(rng.integers(first + 1, entries + 1))
    start, stop, narrow = first * per_entry, last * per_entry, f"x.narrow({dim}, {first}, {last - first})"
    if rng.random() < 0.5:
        return start, stop, example.x.narrow(dim, first, last - first), f"a view {narrow}"
    copy = batch.sliced(last - first).materialize(example.values[start:stop], example.x.device)
    return start, stop, copy, f"a contiguous copy of {narrow}"


def _fresh_values(values: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(fresh, order, delta): row i of ``fresh`` is row order[i] of ``values`` plus delta[i].

    Same shape and kinds of rows, different answers, and each answer follows from a first-call
    answer: a stale result (cached by shape, pointer or object) breaks that link.
    """
    rows = values.shape[0]
    order = torch.from_numpy(rng.permutation(rows)).to(torch.int64)
    moved = values.to(torch.float64)[order]
    finite = torch.isfinite(moved)
    # A shift of 1 is lost in rounding on rows of large magnitude (1e30 + 3 == 1e30 in float32):
    # shift by a fraction of the row's largest magnitude there, so every row with a finite entry
    # changes and a stale answer shows.
    magnitude = torch.where(finite, moved.abs(), 0.0).amax(dim=1) if moved.shape[1] else torch.zeros(rows,
                                                                                                      dtype=moved.dtype)
    delta = torch.from_numpy(rng.choice([1.0, 2.0, -1.5, 3.0], size=rows)) * (magnitude / 64).clamp(min=1.0)
    limit = torch.finfo(values.dtype).max
    shifted = torch.where(finite, (moved + delta[:, None]).clamp(-limit, limit), moved).to(values.dtype)
    # A row at the dtype's largest finite values cannot move up: move it down instead.
    stuck = (shifted.to(torch.float64) == moved).all(dim=1) & finite.any(dim=1)
    delta = torch.where(stuck, -delta.abs(), delta)
    fresh = torch.where(finite, (moved + delta[:, None]).clamp(-limit, limit), moved)
    return fresh.to(values.dtype), order, delta


def check_fresh_values(impl: Impl, example: LseInput, ctx: Context) -> None:
    ctx.comparison("fresh_values")
    rows = example.shape[0]
    fresh, order, delta = _fresh_values(example.values, ctx.rng("fresh_values"))
    x = example.x
    # Same tensor object, same storage, new contents.
    example.write(x, fresh)
    try:
        out = rows_of("fresh_values", ctx.call(x, "the call after writing fresh values into the input"), rows, x.device)
    finally:
        example.write(x, example.values)
    stale = []
    if isinstance(ctx.out, torch.Tensor) and ctx.out.dtype == out.dtype and tuple(ctx.out.shape) == (rows,):
        same = bits(out.cpu()) == bits(ctx.out.detach().cpu())
        expected = ctx.comparison("fresh_values").expected
        changed = torch.isfinite(expected) & torch.isfinite(expected[order])  # delta moved these
        if (same & changed).any():
            stale = ["some answers are bit for bit the ones returned for the previous contents: "
                     "a stale cached result?"]
    _judge_pair(
        "fresh_values", ctx, pick=order, values=fresh, out=out,
        relation="the answer after new values were written into the same input tensor is wrong",
        row_details=lambda row: [f"fresh row:   row {row} now holds batch row {int(order[row])} "
                                 f"+ {float(delta[row])!r} (recipe {example.row_recipe(int(order[row]))})"],
        extra=stale,
    )
