"""The tolerance model: how far a correct float32-accumulating kernel may land from the oracle.

Derived from the numerics, not tuned on results (Blanchard, Higham and Higham 2021; the absolute
condition number of lse is 1, so input perturbations pass through unamplified). A correct kernel
computes  y = m + log(S),  S = sum_j exp(t_j),  t_j = x_j - m,  in float32 (unit roundoff u_acc), then
rounds y to its output dtype (unit roundoff u_out). With A = max |x_j| over the entries that matter
(x_j >= m - 128: below that, exp(t_j) < e^-128 and the whole tail cannot move y measurably):

* exponent arguments: t_j carries an absolute error of at most u_acc * (|x_j| + |m| + |t_j|) <=
  4 u_acc A, also for exp2-based kernels that scale x and m by log2(e) before subtracting; that is a
  relative error of the same size in each term of S;
* summation: a tree of depth ceil(log2 N) plus at most P sequential accumulation steps (loop
  iterations, split partials, passes) gives a relative error of at most u_acc (log2 N + P) per term,
  doubled for the rescaling exp(m_old - m_new) an online kernel applies at each step; the rescale
  arguments telescope (their sum is at most m - m_first <= 128 for terms that matter);
* log(S) and the final m + log(S): u_acc |y| plus a few ulps for exp and log themselves (16 units);
* the result's rounding to its dtype: u_out |y|.

    bound_i = K * ( u_out |y_i| + u_acc ( |y_i| + 4 A_i + 2 (ceil(log2 N) + P) + 128 + 16 ) )

with K = 2 as the margin for the constants the derivation rounds. P = ceil(N / 32): the bound
covers any kernel that keeps at least 32 partial sums per row (a Triton tile of 32 columns or more;
a plain float64 computation meets it trivially). Non-finite results carry no tolerance: expected
+inf, -inf or NaN must be produced exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .oracle import lse_reference, validate_input

UNIT_ROUNDOFF: dict[torch.dtype, float] = {
    torch.float16: 2.0**-11,
    torch.bfloat16: 2.0**-8,
    torch.float32: 2.0**-24,
    torch.float64: 2.0**-53,
}
"""Unit roundoff (half the machine epsilon) of each floating dtype."""

ACCUMULATION_DTYPE = torch.float32
SAFETY_FACTOR = 2.0  # K above
MIN_PARTIAL_SUMS = 32  # P = ceil(N / MIN_PARTIAL_SUMS)
SIGNIFICANT_RANGE = 128.0  # entries below m - 128 cannot move y: e^-128 * N is far below any bound
FIXED_ULPS = 16.0  # exp, log and the final add, a few ulps each


def allowed_error(x: torch.Tensor, expected: torch.Tensor, *, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Per-row absolute error bound (float64, shape (M,), on the CPU) for an output of ``out_dtype``.

    ``expected`` is :func:`reference.lse_reference` of ``x``. Rows whose expected value is not
    finite get a bound of 0: those values must match exactly. The bound is computed where ``x``
    is (a GPU does the float64 passes over a large input far faster than the host) and only the
    (M,) result moves to the CPU.
    """
    validate_input(x)
    if out_dtype not in UNIT_ROUNDOFF:
        raise ValueError(f"out_dtype={out_dtype} has no unit roundoff; expected one of {list(UNIT_ROUNDOFF)}")
    rows, cols = x.shape
    if rows == 0:
        return torch.zeros(0, dtype=torch.float64)
    if cols == 0:
        return torch.zeros(rows, dtype=torch.float64)
    values = x.detach().to(torch.float64)
    y = expected.detach().to(device=x.device, dtype=torch.float64)
    finite = torch.isfinite(values)
    row_max = torch.where(finite, values, torch.full_like(values, -math.inf)).amax(dim=1)
    significant = finite & (values >= (row_max - SIGNIFICANT_RANGE)[:, None])
    magnitude = torch.where(significant, values.abs(), torch.zeros_like(values)).amax(dim=1)
    depth = math.ceil(math.log2(cols)) if cols > 1 else 0
    passes = math.ceil(cols / MIN_PARTIAL_SUMS)
    u_out = UNIT_ROUNDOFF[out_dtype]
    u_acc = UNIT_ROUNDOFF[ACCUMULATION_DTYPE]
    abs_y = torch.where(torch.isfinite(y), y.abs(), torch.zeros_like(y))
    bound = SAFETY_FACTOR * (
        u_out * abs_y
        + u_acc * (abs_y + 4.0 * magnitude + 2.0 * (depth + passes) + SIGNIFICANT_RANGE + FIXED_ULPS)
    )
    return torch.where(torch.isfinite(y), bound, torch.zeros_like(bound)).cpu()


@dataclass(frozen=True)
class Comparison:
    """A candidate's output set against the oracle, row by row (all float64 / bool, on the CPU)."""

    expected: torch.Tensor
    got: torch.Tensor
    bound: torch.Tensor
    error: torch.Tensor
    mismatch: torch.Tensor

    @property
    def mismatches(self) -> int:
        return int(self.mismatch.sum())

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def first_mismatch(self) -> int | None:
        rows = torch.nonzero(self.mismatch).flatten()
        return int(rows[0]) if rows.numel() else None


def is_close(got: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor) -> torch.Tensor:
    """Row mask of agreement: within ``bound`` where ``expected`` is finite, identical otherwise."""
    got = got.to(torch.float64)
    both_nan = torch.isnan(got) & torch.isnan(expected)
    finite = torch.isfinite(expected)
    same_inf = ~finite & (got == expected)
    within = finite & torch.isfinite(got) & ((got - expected).abs() <= bound)
    return both_nan | same_inf | within


def compare(x: torch.Tensor, got: torch.Tensor, *, expected: torch.Tensor | None = None) -> Comparison:
    """Compare a candidate's output ``got`` for input ``x`` with the oracle under the tolerance model.

    ``got`` must already have shape (M,); its dtype picks u_out. ``expected`` may be passed when the
    caller computed the oracle already (e.g. in another process). The oracle and the bound are
    computed on ``x``'s device; the Comparison holds CPU tensors.
    """
    if expected is None:
        expected = lse_reference(x)  # where x is: on a GPU, the float64 passes cost microseconds
    bound = allowed_error(x, expected, out_dtype=got.dtype if got.dtype in UNIT_ROUNDOFF else torch.float32)
    expected = expected.detach().to(device="cpu", dtype=torch.float64)
    got64 = got.detach().to(device="cpu").to(torch.float64)
    close = is_close(got64, expected, bound)
    error = torch.where(close & ~torch.isfinite(expected), torch.zeros_like(got64), (got64 - expected).abs())
    error = torch.nan_to_num(error, nan=math.inf)
    return Comparison(expected=expected, got=got64, bound=bound, error=error, mismatch=~close)
