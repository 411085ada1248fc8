"""Test doubles: small LSE implementations, correct ones written differently and broken ones.

Each broken double has exactly one defect aimed at one check (named in its docstring), so the
tests can show that this check, and not a neighbour, is the one that fails. The Triton doubles
(one kernel per file) live beside this module: two_pass.py, exp2.py, lanes.py.
"""

from __future__ import annotations

import itertools
import math
import weakref

import torch


def _out_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def lse_float64(x: torch.Tensor) -> torch.Tensor:
    """Correct: torch.logsumexp in float64, rounded once to the output dtype."""
    return torch.logsumexp(x.to(torch.float64), dim=1).to(_out_dtype(x))


def lse_torch_float32(x: torch.Tensor) -> torch.Tensor:
    """Correct: torch.logsumexp accumulated in float32 (float64 for float64 input)."""
    return torch.logsumexp(x.to(_out_dtype(x)), dim=1)


def lse_input_dtype(x: torch.Tensor) -> torch.Tensor:
    """Correct: returns the input's own dtype (allowed by the output contract)."""
    return torch.logsumexp(x.to(torch.float64), dim=1).to(x.dtype)


# ---------------------------------------------------------------------------------------------
# Broken doubles: one defect each


def _safe_max(values: torch.Tensor) -> torch.Tensor:
    row_max = values.amax(dim=1, keepdim=True) if values.shape[1] else torch.zeros(values.shape[0], 1)
    return torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))


def off_by_max(x: torch.Tensor) -> torch.Tensor:
    """Forgets to add the row max back: log(sum(exp(x - m))). Caught by agreement, bounds, shift."""
    values = x.to(torch.float64)
    return torch.log(torch.exp(values - _safe_max(values)).sum(dim=1)).to(torch.float32)


def nan_for_neg_inf_rows(x: torch.Tensor) -> torch.Tensor:
    """Computes -inf - (-inf) = NaN for all -inf rows. Only agreement sees it (the other checks
    compare the implementation with itself, or look at finite rows only)."""
    values = x.to(torch.float64)
    row_max = values.amax(dim=1, keepdim=True) if values.shape[1] else torch.full((values.shape[0], 1), -math.inf)
    shift = torch.where(row_max == math.inf, torch.zeros_like(row_max), row_max)
    out = shift[:, 0] + torch.log(torch.exp(values - shift).sum(dim=1))
    out = torch.where((values == math.inf).any(dim=1), math.inf, out)
    return out.to(torch.float32)


def float64_output(x: torch.Tensor) -> torch.Tensor:
    """Right values, but float64 for every input: output_contract."""
    return torch.logsumexp(x.to(torch.float64), dim=1)


def column_output(x: torch.Tensor) -> torch.Tensor:
    """Shape (M, 1) instead of (M,): output_contract."""
    return lse_float64(x)[:, None]


def meta_device_output(x: torch.Tensor) -> torch.Tensor:
    """Right shape and dtype, on the wrong device: output_contract."""
    return lse_float64(x).to("meta")


def returns_input_column(x: torch.Tensor) -> torch.Tensor:
    """Writes the answers over column 0 of x and returns that column: the output shares the
    input's memory (output_contract, which runs before input_unchanged)."""
    out = lse_float64(x)
    if not x.shape[1]:
        return out
    column = x[:, 0]
    column.copy_(out)
    return column


def negates_input(x: torch.Tensor) -> torch.Tensor:
    """Right answer, then x.neg_() in place: input_unchanged."""
    out = lse_float64(x)
    x.neg_()
    return out


def canonicalizes_zeros(x: torch.Tensor) -> torch.Tensor:
    """Right answer, then x.add_(0.0): turns -0.0 into +0.0, values compare equal, bits do not.
    Only input_unchanged (a bitwise comparison) sees it."""
    out = lse_float64(x)
    x.add_(0.0)
    return out


def writes_padding(x: torch.Tensor) -> torch.Tensor:
    """Right answer, then zeroes the storage element after row 0 when it is padding: input_unchanged."""
    out = lse_float64(x)
    rows, cols = x.shape
    if rows and cols and x.stride(1) == 1 and x.stride(0) > cols:
        x.as_strided((1,), (1,), x.storage_offset() + cols).zero_()
    return out


_alternate = itertools.count()


def alternates_rounding(x: torch.Tensor) -> torch.Tensor:
    """Correct on every call (one ulp is inside the tolerance), but every other call rounds the
    last bit up, so two calls on one input differ: determinism."""
    out = lse_float64(x)
    if next(_alternate) % 2:
        return torch.nextafter(out, torch.full_like(out, math.inf))
    return out


_shape_cache: dict[tuple, torch.Tensor] = {}


def caches_by_shape(x: torch.Tensor) -> torch.Tensor:
    """Returns the first answer computed for a (shape, dtype): fresh_values (and agreement later)."""
    key = (tuple(x.shape), x.dtype)
    if key not in _shape_cache:
        _shape_cache[key] = lse_float64(x)
    return _shape_cache[key].clone()


_object_cache: dict[int, tuple[weakref.ref, torch.Tensor]] = {}


def caches_by_object(x: torch.Tensor) -> torch.Tensor:
    """Memoizes on the tensor object: new tensors are right, rewritten ones stale. Only
    fresh_values rewrites a tensor the implementation has seen."""
    entry = _object_cache.get(id(x))
    if entry is None or entry[0]() is not x:  # a dead entry's id may have been reused
        entry = (weakref.ref(x), lse_float64(x))
        _object_cache[id(x)] = entry
    return entry[1].clone()


def first_entry_shift(x: torch.Tensor) -> torch.Tensor:
    """Shifts by the row's first entry instead of its max: exp overflows when a later entry is far
    larger, so the answer depends on entry order: permutation_invariance."""
    values = x.to(torch.float64)
    if not values.shape[1]:
        return lse_float64(x)
    first = values[:, :1]
    shift = torch.where(torch.isfinite(first), first, torch.zeros_like(first))
    out = shift[:, 0] + torch.log(torch.exp((values - shift).to(torch.float32)).sum(dim=1).to(torch.float64))
    return out.to(torch.float32)


def batch_max_shift(x: torch.Tensor) -> torch.Tensor:
    """Shifts every row by the max of the whole batch, computed in float32: rows far below the
    batch max underflow to log(0) = -inf. A row alone is right: row_independence."""
    values = x.to(torch.float32)
    finite = values[torch.isfinite(values)]
    shift = finite.max() if finite.numel() else torch.tensor(0.0)
    return shift + torch.log(torch.exp(values - shift).sum(dim=1))


def hardcoded_row_stride(x: torch.Tensor) -> torch.Tensor:
    """Reads row i at storage offset i * N (assumes contiguous rows): padded, transposed and
    column-step layouts give it other rows' values or the NaN poison: agreement."""
    rows, cols = x.shape
    as_if_contiguous = x.as_strided((rows, cols), (cols, 1), x.storage_offset())
    return lse_float64(as_if_contiguous)


def raises_on_long_rows(x: torch.Tensor) -> torch.Tensor:
    """Raises for N > 4: the runner reports status ERROR with this text."""
    if x.shape[1] > 4:
        raise RuntimeError(f"row too long: {x.shape[1]} > 4")
    return lse_float64(x)


_calls = itertools.count()


def wrong_every_fifth_call(x: torch.Tensor) -> torch.Tensor:
    """Stateful: every fifth call adds 1. Failures depend on call history, not on the input."""
    out = lse_float64(x)
    return out + 1 if next(_calls) % 5 == 4 else out


CORRECT = {"float64": lse_float64, "torch_float32": lse_torch_float32, "input_dtype": lse_input_dtype}
