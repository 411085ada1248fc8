"""What must hold for a row-wise LSE implementation, one named check per property.

Every example costs about three calls of the implementation: one call whose output feeds the
checks that need only it (output contract, input unchanged, agreement, bounds), a second call on
the same input (determinism), and one metamorphic check drawn per example (shift, permutation,
row independence, fresh values), each with one more call.

Metamorphic checks compare two outputs of the candidate, so each side may carry the full
tolerance of the float64 oracle's error model: a pair is consistent when
``|(g2 - g1) - (e2 - e1)| <= bound1 + bound2``, where e1, e2 are the oracle's values for the two
inputs. When x + c is exact, e2 - e1 is c; when rounding moved x + c, the oracle accounts for it,
so a correct implementation can never be flagged.
"""

from __future__ import annotations

import enum
import math
import traceback
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from reference import compare
from reference.errors import InvalidArgument

from .layouts import LayoutKind
from .strategies import LseInput

__all__ = ["CHECKS", "METAMORPHIC", "Check", "CheckFailure", "ImplError", "Plan", "Stage", "run_checks"]

Impl = Callable[[torch.Tensor], object]


class Stage(enum.Enum):
    """When a check runs within one example."""

    FIRST_CALL = "first_call"  # judges the output of the example's first call
    SECOND_CALL = "second_call"  # calls again on the same input
    METAMORPHIC = "metamorphic"  # calls on a transformed input; one drawn per example


@dataclass(frozen=True)
class Plan:
    """Which metamorphic check an example runs, and the seed its transformation derives from."""

    metamorphic: str | None = None
    seed: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"metamorphic": self.metamorphic, "seed": self.seed}


class CheckFailure(AssertionError):
    """A check found the implementation wrong; :meth:`message` says where, by how much, and why."""

    def __init__(
        self,
        check: str,
        headline: str,
        *,
        row: int | None = None,
        expected: float | None = None,
        got: float | None = None,
        bound: float | None = None,
        mismatches: int | None = None,
        rows: int | None = None,
        details: Sequence[str] = (),
        why: str = "",
    ) -> None:
        super().__init__(headline)
        self.check = check
        self.headline = headline
        self.row = row
        self.expected = expected
        self.got = got
        self.bound = bound
        self.mismatches = mismatches
        self.rows = rows
        self.details = list(details)
        self.why = why or (CHECKS[check].why if check in CHECKS else "")
        self.input: str | None = None  # the counterexample, filled in by run_checks
        self.replay: str | None = None  # the replay command, filled in once a reproducer exists

    def message(self) -> str:
        lines = [f"check {self.check!r} failed: {self.headline}"]
        if self.input:
            lines.append(f"  input:    {self.input}")
        if self.expected is not None:
            lines.append(f"  expected: {_number(self.expected)}")
        if self.got is not None:
            lines.append(f"  got:      {_number(self.got)}")
        if self.bound is not None and self.expected is not None and self.got is not None:
            if math.isfinite(self.expected):
                error = abs(self.got - self.expected)
                lines.append(f"  error:    {error:.6g} > allowed {self.bound:.6g} (tolerance model of reference.allowed_error)")
            else:
                lines.append("  error:    a non-finite result must match exactly (no tolerance)")
        if self.mismatches is not None and self.rows is not None:
            lines.append(f"  rows:     {self.mismatches} of {self.rows} rows fail")
        lines.extend(f"  {line}" for line in self.details)
        if self.why:
            lines.append(f"  why it matters: {self.why}")
        if self.replay:
            lines.append(f"  replay:   {self.replay}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.message()

    def to_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "headline": self.headline,
            "row": self.row,
            "expected": _json_float(self.expected),
            "got": _json_float(self.got),
            "bound": _json_float(self.bound),
            "mismatches": self.mismatches,
            "rows": self.rows,
            "why": self.why,
            "replay": self.replay,
            "message": self.message(),
        }


class ImplError(Exception):
    """The implementation raised instead of returning; carries its traceback text."""

    def __init__(self, call: str, exc: BaseException) -> None:
        self.call = call
        self.exc_type = type(exc).__name__
        self.text = "".join(traceback.format_exception(exc)).rstrip()
        self.input: str | None = None
        self.replay: str | None = None
        super().__init__(f"{self.exc_type} raised by the implementation during {call}: {exc}")

    def message(self) -> str:
        lines = [str(self)]
        if self.input:
            lines.append(f"  input:    {self.input}")
        if self.replay:
            lines.append(f"  replay:   {self.replay}")
        lines.append("  traceback:")
        lines.extend("    " + line for line in self.text.splitlines())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {"call": self.call, "exception": self.exc_type, "traceback": self.text, "replay": self.replay}


def _number(value: float) -> str:
    return repr(float(value))


def _json_float(value: float | None) -> float | str | None:
    if value is None:
        return None
    return value if math.isfinite(value) else str(value)


# --------------------------------------------------------------------------------------------
# Per-example state


class _Snapshot:
    """Raw bits of the input before the first call: the view, and the whole storage when small.

    Bits, not values: NaN != NaN and -0.0 == 0.0 would hide changes a value comparison misses.
    """

    _STORAGE_LIMIT = 1 << 28  # bytes; huge-offset storages are gigabytes and mostly unbacked

    def __init__(self, x: torch.Tensor) -> None:
        self.view = _bits(x).clone()
        storage = x.untyped_storage()
        self.storage = None
        if storage.nbytes() <= self._STORAGE_LIMIT:
            self.storage = _storage_bytes(x).clone()


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's raw bits as integers of the same width (a view; works for any strides)."""
    int_dtype = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.detach().view(int_dtype)


def _storage_bytes(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=x.device).set_(x.untyped_storage())


def _hex(bits: int, width: int) -> str:
    return f"0x{bits & ((1 << (8 * width)) - 1):0{2 * width}x}"


class Context:
    """What the checks of one example share: the first output, the input snapshot, the oracle."""

    def __init__(self, impl: Impl, example: LseInput, plan: Plan) -> None:
        self.impl = impl
        self.example = example
        self.plan = plan
        self.snapshot = _Snapshot(example.x)
        self.out: object = None
        self._comparison = None

    def call(self, x: torch.Tensor, call: str) -> object:
        try:
            # Triton's interpreter evaluates masked lanes with numpy and warns about inf - inf;
            # those warnings say nothing about the implementation.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return self.impl(x)
        except Exception as exc:  # anything the implementation raises is its error, not ours
            raise ImplError(call, exc) from None

    def comparison(self, check: str):
        """reference.compare of the first output against the oracle (computed once).

        An output that cannot be compared fails ``check``, the check that needed it.
        """
        if self._comparison is None:
            out = _rows_of(check, self.out, self.example.shape[0])
            self._comparison = compare(self.on_device(self.example.values), out)
        return self._comparison

    def on_device(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` where the input lives, so the float64 oracle runs on the GPU when there is one."""
        return values.to(self.example.x.device)

    def rng(self, check: str) -> np.random.Generator:
        return np.random.default_rng([self.plan.seed, zlib.crc32(check.encode())])


def _rows_of(check: str, out: object, rows: int) -> torch.Tensor:
    """The output as a (rows,) tensor, or a failure of ``check`` saying why it cannot be judged."""
    if not isinstance(out, torch.Tensor):
        raise CheckFailure(check, f"returned a {type(out).__name__}, not a torch.Tensor: there is nothing to compare")
    if tuple(out.shape) != (rows,):
        raise CheckFailure(check, f"returned shape {tuple(out.shape)}, expected ({rows},): one value per row")
    if not (out.dtype.is_floating_point or out.dtype.is_complex):
        raise CheckFailure(check, f"returned dtype {out.dtype}, which cannot hold -inf, +inf or NaN")
    return out.detach()


# --------------------------------------------------------------------------------------------
# Checks on the first call


def _check_output_contract(impl: Impl, example: LseInput, ctx: Context) -> None:
    x, out = example.x, ctx.out
    rows = example.shape[0]
    _rows_of("output_contract", out, rows)
    assert isinstance(out, torch.Tensor)
    allowed = {torch.float32, x.dtype}
    if out.dtype not in allowed:
        names = " or ".join(sorted(str(d) for d in allowed))
        raise CheckFailure("output_contract", f"returned dtype {out.dtype}, expected {names}")
    if out.device != x.device:
        raise CheckFailure("output_contract", f"returned a tensor on {out.device}, but the input is on {x.device}")
    if _overlaps(out, x):
        raise CheckFailure(
            "output_contract",
            "the output shares memory with the input",
            details=[f"output storage at {out.untyped_storage().data_ptr():#x}, input storage at "
                     f"{x.untyped_storage().data_ptr():#x}"],
        )


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    if not sa.nbytes() or not sb.nbytes():
        return False
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes()


def _check_input_unchanged(impl: Impl, example: LseInput, ctx: Context) -> None:
    x = example.x
    before, after = ctx.snapshot.view, _bits(x)
    changed = before != after
    if changed.any():
        row, col = (int(i) for i in torch.nonzero(changed)[0])
        width = x.element_size()
        was = ctx.example.values[row, col].item()
        now = x[row, col].item()
        raise CheckFailure(
            "input_unchanged",
            f"the call changed the input at x[{row}, {col}] ({int(changed.sum())} elements changed)",
            row=row,
            details=[
                f"before:   {_hex(int(before[row, col]), width)} ({was!r})",
                f"after:    {_hex(int(after[row, col]), width)} ({now!r})",
                f"recipe:   row {row} follows {example.row_recipe(row)}",
            ],
        )
    if ctx.snapshot.storage is not None:
        storage_now = _storage_bytes(x)
        if not torch.equal(storage_now, ctx.snapshot.storage):
            first = int(torch.nonzero(storage_now != ctx.snapshot.storage)[0]) // x.element_size()
            raise CheckFailure(
                "input_unchanged",
                f"the call wrote into the input's storage outside the view, at storage element {first}",
                details=[f"layout:   {example.layout.describe(*example.shape)}: "
                         "padding and neighbouring data belong to the caller"],
            )


def _check_agreement(impl: Impl, example: LseInput, ctx: Context) -> None:
    _raise_disagreement("agreement", example, ctx.comparison("agreement"), "differs from the float64 reference")


def _raise_disagreement(check: str, example: LseInput, comparison, what: str, *, details: Sequence[str] = ()) -> None:
    row = comparison.first_mismatch()
    if row is None:
        return
    rows = example.shape[0]
    raise CheckFailure(
        check,
        f"row {row} {what}",
        row=row,
        expected=float(comparison.expected[row]),
        got=float(comparison.got[row]),
        bound=float(comparison.bound[row]),
        mismatches=comparison.mismatches,
        rows=rows,
        details=[*details, f"row {row}:   recipe {example.row_recipe(row)}, row max {_row_max(example, row)}"],
    )


def _row_max(example: LseInput, row: int) -> str:
    values = example.values[row].to(torch.float64)
    return repr(float(values.max())) if values.numel() else "(empty row)"


def _check_bounds(impl: Impl, example: LseInput, ctx: Context) -> None:
    comparison = ctx.comparison("bounds")
    rows, cols = example.shape
    if not rows or not cols:
        return
    values = example.values.to(torch.float64)
    row_max = values.amax(dim=1)
    checked = torch.isfinite(comparison.expected)
    got, bound = comparison.got, comparison.bound
    log_n = math.log(cols)
    low, high = row_max - bound, row_max + log_n + bound
    outside = checked & ~((got >= low) & (got <= high))
    if not outside.any():
        return
    row = int(torch.nonzero(outside)[0])
    raise CheckFailure(
        "bounds",
        f"row {row} lies outside [max, max + log N] = [{float(row_max[row])!r}, {float(row_max[row] + log_n)!r}]",
        row=row,
        got=float(got[row]),
        mismatches=int(outside.sum()),
        rows=rows,
        details=[
            f"allowed:  [{float(low[row])!r}, {float(high[row])!r}] including the tolerance {float(bound[row]):.6g}",
            f"row {row}:   recipe {example.row_recipe(row)}, N = {cols}",
        ],
    )


# --------------------------------------------------------------------------------------------
# A second call on the same input


def _check_determinism(impl: Impl, example: LseInput, ctx: Context) -> None:
    rows = example.shape[0]
    first = _rows_of("determinism", ctx.out, rows)
    second = _rows_of("determinism", ctx.call(example.x, "the second call on the same input"), rows)
    if first.dtype != second.dtype:
        raise CheckFailure("determinism", f"the first call returned {first.dtype}, the second {second.dtype}")
    a, b = _bits(first.cpu()), _bits(second.cpu())
    differ = a != b
    if not differ.any():
        return
    row = int(torch.nonzero(differ)[0])
    width = first.element_size()
    raise CheckFailure(
        "determinism",
        f"two calls on the same input returned different bits in row {row}",
        row=row,
        mismatches=int(differ.sum()),
        rows=rows,
        details=[
            f"first:    {_hex(int(a[row]), width)} ({first[row].item()!r})",
            f"second:   {_hex(int(b[row]), width)} ({second[row].item()!r})",
        ],
    )


# --------------------------------------------------------------------------------------------
# Metamorphic checks: a transformed input whose answer is known from the first one


def _inconsistent(g1, e1, b1, g2, e2, b2) -> torch.Tensor:
    """Rows where the pair (g1, g2) breaks the relation the oracle pair (e1, e2) obeys."""
    finite = torch.isfinite(e1) & torch.isfinite(e2)
    # float64 rounding of the differences themselves, far below any bound
    slack = 8 * 2.0**-53 * (g1.abs() + g2.abs() + e1.abs() + e2.abs()).nan_to_num(0.0, 0.0, 0.0)
    drift = ((g2 - g1) - (e2 - e1)).abs()
    close = drift <= b1 + b2 + slack  # False where anything is NaN or inf
    same = (g1 == g2) | (torch.isnan(g1) & torch.isnan(g2))
    both_special = ~torch.isfinite(e1) & (torch.isnan(e1) & torch.isnan(e2) | (e1 == e2))
    return torch.where(finite, ~close, both_special & ~same)


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
    out = _rows_of(check, ctx.call(x, call), values.shape[0])
    _judge_pair(check, ctx, pick=pick, values=values, out=out, relation=relation, row_details=row_details)


def _judge_pair(check, ctx, *, pick, values, out, relation, row_details, extra: Sequence[str] = ()) -> None:
    """Fail ``check`` where ``out`` (for ``values``) breaks the oracle's relation to rows ``pick``."""
    first = ctx.comparison(check)
    rows = values.shape[0]
    second = compare(ctx.on_device(values), out)
    pick = slice(None) if pick is None else pick
    g1, e1, b1 = first.got[pick], first.expected[pick], first.bound[pick]
    bad = _inconsistent(g1, e1, b1, second.got, second.expected, second.bound)
    if not bad.any():
        return
    row = int(torch.nonzero(bad)[0])
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
            f"first call:  {_number(float(g1[row]))} (reference {_number(float(e1[row]))})",
            f"second call: {_number(float(second.got[row]))} (reference {_number(float(second.expected[row]))})",
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


def _check_shift_invariance(impl: Impl, example: LseInput, ctx: Context) -> None:
    values = example.values
    c = _shift_amounts(values, ctx.rng("shift_invariance"))
    shifted64 = values.to(torch.float64) + c[:, None]
    shifted = shifted64.to(values.dtype)
    # A shift that rounds a finite entry to infinity changes the answer's kind; leave such rows alone.
    overflow = (torch.isfinite(values) & ~torch.isfinite(shifted)).any(dim=1)
    c = torch.where(overflow, torch.zeros_like(c), c)
    shifted = (values.to(torch.float64) + c[:, None]).to(values.dtype)
    x = example.layout.materialize(shifted, example.x.device)
    _metamorphic(
        "shift_invariance", example, ctx, pick=None, values=shifted, x=x,
        relation="lse(x + c) != lse(x) + c",
        call="the call on x + c (shift_invariance)",
        row_details=lambda row: [f"shift:       c = {float(c[row])!r} added to every entry of row {row} "
                                 f"(recipe {example.row_recipe(row)})"],
    )


def _check_permutation_invariance(impl: Impl, example: LseInput, ctx: Context) -> None:
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
    x = example.layout.materialize(permuted, example.x.device)
    _metamorphic(
        "permutation_invariance", example, ctx, pick=None, values=permuted, x=x,
        relation="lse of a permuted row differs from lse of the row",
        call="the call on permuted rows (permutation_invariance)",
        row_details=lambda row: [f"permutation: {how} (row {row} recipe {example.row_recipe(row)})"],
    )


def _check_row_independence(impl: Impl, example: LseInput, ctx: Context) -> None:
    rows = example.shape[0]
    if rows == 0:
        return
    rng = ctx.rng("row_independence")
    start = int(rng.integers(0, rows))
    stop = start + 1 if rng.random() < 0.5 else int(rng.integers(start + 1, rows + 1))
    values = example.values[start:stop]
    as_view = bool(rng.random() < 0.5) and example.layout.kind is not LayoutKind.HUGE_OFFSET
    # A view keeps the batch's strides and moves the storage offset; a fresh contiguous copy
    # changes the launch (fewer rows, other tiles) but not the answer.
    x = example.x[start:stop] if as_view else values.to(example.x.device).clone()
    form = "a view of the batch" if as_view else "a contiguous copy"
    _metamorphic(
        "row_independence", example, ctx, pick=slice(start, stop), values=values, x=x,
        relation=f"rows {start}:{stop} alone give a different answer than inside the batch",
        call=f"the call on rows {start}:{stop} alone (row_independence)",
        row_details=lambda row: [f"rows:        x[{start}:{stop}] passed alone as {form}; "
                                 f"this is batch row {start + row} (recipe {example.row_recipe(start + row)})"],
    )


def _fresh_values(values: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(fresh, order, delta): row i of ``fresh`` is row order[i] of ``values`` plus delta[i].

    Same shape and kinds of rows, different answers, and each answer follows from a first-call
    answer: a stale result (cached by shape, pointer or object) breaks that link.
    """
    rows = values.shape[0]
    order = torch.from_numpy(rng.permutation(rows)).to(torch.int64)
    delta = torch.from_numpy(rng.choice([1.0, 2.0, -1.5, 3.0], size=rows))
    moved = values.to(torch.float64)[order]
    limit = torch.finfo(values.dtype).max
    fresh = torch.where(torch.isfinite(moved), (moved + delta[:, None]).clamp(-limit, limit), moved)
    return fresh.to(values.dtype), order, delta


def _check_fresh_values(impl: Impl, example: LseInput, ctx: Context) -> None:
    ctx.comparison("fresh_values")
    rows = example.shape[0]
    fresh, order, delta = _fresh_values(example.values, ctx.rng("fresh_values"))
    x = example.x
    # Same tensor object, same storage, new contents.
    x.copy_(fresh.to(x.device))
    try:
        out = _rows_of("fresh_values", ctx.call(x, "the call after writing fresh values into the input"), rows)
    finally:
        x.copy_(example.values.to(x.device))
    stale = []
    if isinstance(ctx.out, torch.Tensor) and ctx.out.dtype == out.dtype and tuple(ctx.out.shape) == (rows,):
        same = _bits(out.cpu()) == _bits(ctx.out.detach().cpu())
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


# --------------------------------------------------------------------------------------------
# Registry


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
        _check_output_contract,
    ),
    Check(
        "input_unchanged",
        "x is bit for bit the same after the call (NaN payloads and padding included)",
        "callers reuse their input (e.g. for the backward pass); a kernel that shifts or masks in place "
        "corrupts it silently",
        _check_input_unchanged,
    ),
    Check(
        "agreement",
        "each row matches the float64 oracle within the tolerance model; non-finite rows exactly",
        "this is the answer itself: the oracle is exact torch.logsumexp semantics in float64 and the "
        "tolerance covers any correct float32-accumulating kernel",
        _check_agreement,
    ),
    Check(
        "bounds",
        "finite rows satisfy max <= lse <= max + log N (up to the tolerance)",
        "these bounds hold for every input; leaving them means the max was not added back, masked lanes "
        "were counted, or the log was taken per lane",
        _check_bounds,
    ),
    Check(
        "determinism",
        "two calls on the same input return identical bits",
        "nondeterministic results make training runs irreproducible and hide races between programs",
        _check_determinism,
        Stage.SECOND_CALL,
    ),
    Check(
        "shift_invariance",
        "lse(x + c) = lse(x) + c for a per-row constant c",
        "a kernel that forgets to add the row max back is off by exactly the shift, yet looks like a valid "
        "log-probability",
        _check_shift_invariance,
        Stage.METAMORPHIC,
    ),
    Check(
        "permutation_invariance",
        "permuting the entries of a row does not change its lse",
        "an answer that depends on entry order means the max or the sum only sees part of the row "
        "(e.g. the first tile's max)",
        _check_permutation_invariance,
        Stage.METAMORPHIC,
    ),
    Check(
        "row_independence",
        "a row alone gives the same answer as inside the batch",
        "one row's answer leaking into another (shared max, wrong row stride, unmasked rows) corrupts "
        "every batch that mixes rows",
        _check_row_independence,
        Stage.METAMORPHIC,
    ),
    Check(
        "fresh_values",
        "new values written into the same tensor get their own answer",
        "a result cached by shape, pointer or object is stale as soon as the caller reuses a buffer",
        _check_fresh_values,
        Stage.METAMORPHIC,
    ),
)
CHECKS: dict[str, Check] = {check.name: check for check in _CHECK_LIST}
"""Every check by name, in the order they run within an example."""

METAMORPHIC: tuple[str, ...] = tuple(c.name for c in _CHECK_LIST if c.stage is Stage.METAMORPHIC)


def validate_checks(checks: Iterable[str] | None) -> tuple[str, ...]:
    """The requested check names in registry order; all of them for None."""
    if checks is None:
        return tuple(CHECKS)
    if isinstance(checks, str):
        checks = [checks]
    names = list(checks)
    unknown = [name for name in names if name not in CHECKS]
    if unknown or not names:
        raise InvalidArgument(
            f"checks={names!r}: {'unknown ' + ', '.join(map(repr, unknown)) if unknown else 'empty'}; "
            f"choose from {', '.join(CHECKS)}."
        )
    return tuple(name for name in CHECKS if name in names)


def run_checks(impl: Impl, example: LseInput, *, checks: Iterable[str] | None = None, plan: Plan | None = None) -> None:
    """Run the selected checks on one example; raise the first :class:`CheckFailure` or :class:`ImplError`.

    All first-call checks run, then determinism, then only the metamorphic check the plan names
    (default: the first selected one).
    """
    names = validate_checks(checks)
    if plan is None:
        plan = Plan(next((n for n in names if n in METAMORPHIC), None))
    ctx = Context(impl, example, plan)
    try:
        ctx.out = ctx.call(example.x, "the first call")
        for name in names:
            check = CHECKS[name]
            if check.stage is not Stage.METAMORPHIC or name == plan.metamorphic:
                check.fn(impl, example, ctx)
    except (CheckFailure, ImplError) as failure:
        failure.input = example.describe()
        raise
