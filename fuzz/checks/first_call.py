"""Checks on the example's first call (output contract, input unchanged, agreement, bounds), and
determinism (a second call on the same input)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from reference import acceptance_interval, compare

from ..contract import OutputDtype, dtype_name
from ..failures import CheckFailure
from ..strategies import LseInput
from .context import Context, Impl, bits, hex_bits, rows_of, storage_bytes


def check_output_contract(impl: Impl, example: LseInput, ctx: Context) -> None:
    x, out = example.x, ctx.out
    rows_of("output_contract", out, example.shape[0], x.device)
    assert isinstance(out, torch.Tensor)
    allowed = ctx.contract.output_dtype.allowed(x.dtype)
    if out.dtype not in allowed:
        names = " or ".join(sorted(str(d) for d in allowed))
        declared = "" if ctx.contract.output_dtype is OutputDtype.EITHER else \
            f" (the declared output dtype: {ctx.contract.output_dtype.describe()})"
        raise CheckFailure("output_contract", f"returned dtype {out.dtype}, expected {names}{declared}")
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


def check_memory_bounds(impl: Impl, example: LseInput, ctx: Context) -> None:
    """Judged during every call, not after it: on the CPU, Triton's interpreter checks each access
    of the kernel before it happens (:mod:`fuzz.interpreter.bounds`), and :meth:`Context.call` turns
    an access it stopped into this check's failure. Nothing is left to judge once a call returned."""


def check_uninitialized_read(impl: Impl, example: LseInput, ctx: Context) -> None:
    """Judged during every call, like ``memory_bounds``: on the CPU the call's ``torch.empty`` allocations
    are tracked byte by byte (:mod:`fuzz.interpreter.initialized`), a kernel's read of an unwritten byte
    is stopped before it happens and a result holding one is refused as the call returns; :meth:`Context.call`
    turns either into this check's failure."""


def check_input_unchanged(impl: Impl, example: LseInput, ctx: Context) -> None:
    raise_if_input_changed("input_unchanged", example, ctx, "the call")


def raise_if_input_changed(check: str, example: LseInput, ctx: Context, who: str) -> None:
    """The input's bits, and its storage outside the view, as the example drew them; otherwise a
    failure of ``check`` naming the first element ``who`` changed. ``input_unchanged`` judges the
    call, ``grad_input_unchanged`` the forward and backward together."""
    x = example.x
    # Judged on the rows: for an N-D input, the (M, N) rows of each (the same elements).
    before, after = example.as_rows(ctx.snapshot.view), example.as_rows(bits(x))
    changed = before != after
    if changed.any():
        row, col = (int(i) for i in torch.nonzero(changed)[0])
        width = x.element_size()
        was = ctx.example.values[row, col].item()
        now = example.as_rows(x)[row, col].item()
        raise CheckFailure(
            check,
            f"{who} changed the input at {example.where(row, col)} ({int(changed.sum())} elements changed)",
            row=row,
            details=[
                f"before:   {hex_bits(int(before[row, col]), width)} ({was!r})",
                f"after:    {hex_bits(int(after[row, col]), width)} ({now!r})",
                f"recipe:   row {row} follows {example.row_recipe(row)}",
            ],
        )
    if ctx.snapshot.storage is not None:
        storage_now = storage_bytes(x)
        if not torch.equal(storage_now, ctx.snapshot.storage):
            first = int(torch.nonzero(storage_now != ctx.snapshot.storage)[0]) // x.element_size()
            raise CheckFailure(
                check,
                f"{who} wrote into the input's storage outside the view, at storage element {first}",
                details=[f"layout:   {example.describe_layout()}: "
                         "padding and neighbouring data belong to the caller"],
            )


def check_agreement(impl: Impl, example: LseInput, ctx: Context) -> None:
    comparison = ctx.comparison("agreement")
    if comparison.ok:
        return
    declared = ctx.contract.lse_base
    other = 2 if declared == "e" else "e"
    # A kernel whose LSE is in the other base: the failure says so, and how to declare it.
    out = rows_of("agreement", ctx.out, example.shape[0], example.x.device)
    agrees = compare(ctx.on_device(example.values), out, base=other).ok
    base = [f"base:     the LSE is declared in base {declared} (--lse-base {declared})"
            + (f"; the result agrees with the reference in base {other}: the kernel's LSE is base {other}"
               if agrees else "")] if agrees or declared != "e" else []
    raise_disagreement("agreement", example, comparison, "differs from the float64 reference", details=base)


def raise_disagreement(check: str, example: LseInput, comparison, what: str, *, details: Sequence[str] = ()) -> None:
    row = comparison.first_mismatch()
    if row is None:
        return
    rows = example.shape[0]
    expected = float(comparison.expected[row])
    beyond = math.isfinite(expected) and not math.isfinite(float(comparison.low[row]))
    note = [f"note:     {expected!r} lies beyond {dtype_name(comparison.out_dtype)}'s range: only "
            f"{float(comparison.low[row])!r} is right"] if beyond else []
    raise CheckFailure(
        check,
        f"row {row} {what}",
        row=row,
        expected=expected,
        got=float(comparison.got[row]),
        bound=float(comparison.bound[row]),
        ulps=comparison.ulps(row),
        ratio=comparison.ratio(row),
        out_dtype=dtype_name(comparison.out_dtype),
        explanation=comparison.explain(row),
        mismatches=comparison.mismatches,
        rows=rows,
        details=[*details, *note, f"row {row}:   recipe {example.row_recipe(row)}, row max {_row_max(example, row)}"],
    )


def _row_max(example: LseInput, row: int) -> str:
    values = example.values[row].to(torch.float64)
    return repr(float(values.max())) if values.numel() else "(empty row)"


def check_bounds(impl: Impl, example: LseInput, ctx: Context) -> None:
    comparison = ctx.comparison("bounds")
    rows, cols = example.shape
    if not rows or not cols:
        return
    values = example.values.to(torch.float64)
    row_max = values.amax(dim=1)
    checked = torch.isfinite(comparison.expected)
    got, bound, dtype = comparison.got, comparison.pre_rounding_bound, comparison.out_dtype
    log_n = math.log(cols)
    # m <= y <= m + log N, and rounding to the output dtype is monotone: every accepted output lies
    # in the acceptance interval of [m - b, m + log N + b] (rounded outwards to the dtype, as for
    # agreement), an overflow to +inf the dtype makes right included. A base-2 LSE: all times log2(e).
    scale = 1.0 if ctx.contract.lse_base == "e" else 1.0 / math.log(2.0)
    row_max, log_n = row_max * scale, log_n * scale
    low, high = acceptance_interval(row_max + log_n / 2, log_n / 2 + bound, out_dtype=dtype)
    outside = checked & ~((got >= low) & (got <= high))
    if not outside.any():
        return
    row = int(torch.nonzero(outside)[0])
    raise CheckFailure(
        "bounds",
        f"row {row} lies outside [max, max + log N]{'' if scale == 1.0 else ' x log2(e)'} = "
        f"[{float(row_max[row])!r}, {float(row_max[row] + log_n)!r}]",
        row=row,
        got=float(got[row]),
        mismatches=int(outside.sum()),
        rows=rows,
        details=[
            f"allowed:  [{float(low[row])!r}, {float(high[row])!r}] in {dtype_name(dtype)}, including the "
            f"tolerance {float(bound[row]):.6g}",
            f"row {row}:   recipe {example.row_recipe(row)}, N = {cols}",
        ],
    )


def check_determinism(impl: Impl, example: LseInput, ctx: Context) -> None:
    rows = example.shape[0]
    device = example.x.device
    first = rows_of("determinism", ctx.out, rows, device)
    second = rows_of("determinism", ctx.call(example.x, "the second call on the same input"), rows, device)
    if first.dtype != second.dtype:
        raise CheckFailure("determinism", f"the first call returned {first.dtype}, the second {second.dtype}")
    a, b = bits(first.cpu()), bits(second.cpu())
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
            f"first:    {hex_bits(int(a[row]), width)} ({first[row].item()!r})",
            f"second:   {hex_bits(int(b[row]), width)} ({second[row].item()!r})",
        ],
    )
