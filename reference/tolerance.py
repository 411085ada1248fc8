"""The tolerance model: which outputs, in the candidate's own output dtype, a correct kernel may return.

Derived from the numerics, not tuned on results (Blanchard, Higham and Higham 2021; the absolute
condition number of lse is 1, so input perturbations pass through unamplified). A correct kernel
computes  y = m + log(S),  S = sum_j exp(t_j),  t_j = x_j - m,  accumulating in float32 (unit roundoff
u_acc), and returns it in an output dtype D (unit roundoff u_D): float32, or the input's own dtype.
Judging happens in D:

    accepted_i = [ down_D(y_i - b_i), up_D(y_i + b_i) ]

where y_i is the float64 oracle and b_i bounds how far the value the kernel finally rounds to D may lie
from y_i. The final rounding may be to nearest (IEEE's default) or directed: Triton's interpreter
converts float32 to bfloat16 by truncation, and a kernel may ask for round-toward-zero. So each end is
the faithful rounding of y_i -+ b_i away from y_i: round_D (nearest even) and, where that moved the end
inwards, D's next value outwards (down_D, up_D), within D's finite range; overflow keeps IEEE's rule
(round_D to +-inf). Rounding is monotone, so any value within b_i of y_i, rounded either way, lands in
the interval: the final rounding needs no term of its own, and near D's largest finite value the
interval holds the finite value, +inf, or both, as a correct kernel's rounding would. With A_i = max |x_j| over the
entries that matter (x_j >= m - 128: below that, exp(t_j) < e^-128 cannot move y measurably):

    b_i = K * ( u_acc ( |y_i| + 4 A_i + 2 (ceil(log2 N) + P) + 128 + 16 )      float32 accumulation
              + u_D |m_i|                  if D is narrower than the input    the max rounded to D
              + u_D ( |log S_i| + 2 - 1/S_i ) + (N - 1) eta_D / S_i + E_i     if D is narrower than float32 )

* exponent arguments: t_j carries an absolute error of at most u_acc (|x_j| + |m| + |t_j|) <= 4 u_acc A,
  also for exp2-based kernels that scale x and m by log2(e) before subtracting;
* summation: a tree of depth ceil(log2 N) plus at most P sequential steps (loop iterations, split
  partials, passes), doubled for the rescaling exp(m_old - m_new) of an online kernel; the rescale
  arguments telescope to at most 128 over the terms that matter;
* log(S) and the final m + log(S) in float32: u_acc |y| plus a few ulps for exp and log (16 units);
* the max rounded to D before the final add (float64 input, float32 output): u_D |m|;
* a kernel that works in a D narrower than float32 the way torch.logsumexp does (each elementwise
  step rounded to D, the sum accumulated in float32): log S rounded to D costs u_D |log S|, where
  log S = y - m comes from the oracle (under cancellation, -log N < m < 0, |log S| exceeds |y|: that is
  the several ulps of y torch loses); the sum S rounded to D costs u_D in log S, and each term
  exp(t_j) rounded to D u_D on its share of S: u_D (1 - 1/S), since the max's term exp(0) = 1 is exact;
  the N - 1 other terms, where they underflow in D, lose at most eta_D (half D's smallest subnormal)
  each, (N - 1) eta_D / S in log S; the arguments t_j rounded to D move log S by at most
  E = log( sum_j p_j exp(u_D |t_j|) ),  p_j = exp(t_j) / S  (the softmax), about u_D times the
  softmax-weighted mean of |t_j|, which is at most log N.

K = 2 is the margin for the constants the derivation rounds; P = ceil(N / 32) covers any kernel that
keeps at least 32 partial sums per row (a Triton tile of 32 columns or more). What stays outside: a sum
accumulated in D (its error grows with N, not log N), a max not added back, masked lanes counted,
anything off by whole units. Non-finite oracle values carry no tolerance: +inf, -inf or NaN must be
produced exactly.

torch's own float64 -> float16/bfloat16 conversion rounds twice (through float32), so it can return
a value one ulp off, or +inf just below the overflow threshold; :func:`round_to_dtype` rounds once,
exactly as IEEE 754 specifies, and that is what the interval uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import overload

import torch

from .errors import InvalidArgument
from .merge_oracle import check_base
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
LOG2E = 1.0 / math.log(2.0)  # a base-2 LSE is the natural one times log2(e)


@dataclass(frozen=True)
class _Format:
    """The binary floating-point grid of a dtype: x = +-s * 2^(e - p + 1), s < 2^p, e >= min_exponent."""

    precision: int  # significand bits, the implicit one included
    min_exponent: int  # exponent of the smallest normal number
    max_exponent: int  # exponent of the largest finite number
    max_finite: float


def _format(dtype: torch.dtype) -> _Format:
    info = torch.finfo(dtype)
    return _Format(
        precision=1 - round(math.log2(info.eps)),
        min_exponent=round(math.log2(info.smallest_normal)),
        max_exponent=math.floor(math.log2(info.max)),
        max_finite=float(info.max),
    )


_FORMATS: dict[torch.dtype, _Format] = {dtype: _format(dtype) for dtype in UNIT_ROUNDOFF}


def _check_dtype(dtype: object, name: str) -> _Format:
    if dtype not in _FORMATS:
        names = ", ".join(str(d) for d in _FORMATS)
        raise InvalidArgument(f"{name}={dtype!r} is not a supported floating dtype; expected one of {names}.")
    return _FORMATS[dtype]


@overload
def ulp(value: float, dtype: torch.dtype) -> float: ...
@overload
def ulp(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor: ...
def ulp(value, dtype):
    """The spacing of ``dtype``'s grid at ``value``: 2^(e - p + 1) for 2^e <= |value| < 2^(e + 1).

    Below the smallest normal number (subnormals, zero) it is the subnormal spacing; at and beyond
    2^(emax + 1) it stays the spacing of the largest finite binade, so an error beyond the range
    still reads in the units of D's largest values. +-inf gives inf, NaN gives NaN. A float gives a
    float; a tensor gives a float64 tensor of its shape.
    """
    fmt = _check_dtype(dtype, "dtype")
    if not isinstance(value, torch.Tensor):
        return float(ulp(torch.tensor(float(value), dtype=torch.float64), dtype))
    v = value.detach().to(torch.float64)
    # frexp: |v| = mantissa * 2^exponent with mantissa in [0.5, 1), so e = exponent - 1 (exact, also
    # for float64 subnormals); zero gets the subnormal spacing through the clamp.
    _, exponent = torch.frexp(v)
    e = torch.where(v == 0, fmt.min_exponent, exponent.to(torch.int64) - 1)
    e = e.clamp(fmt.min_exponent, fmt.max_exponent)
    spacing = torch.ldexp(torch.ones_like(v), e - fmt.precision + 1)
    return torch.where(torch.isfinite(v), spacing, v.abs())


def round_to_dtype(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``values`` rounded once to ``dtype`` (IEEE 754 round to nearest, ties to even), as float64.

    Overflow gives +-inf exactly when IEEE does: from max + ulp(max) / 2 on (that tie goes to the
    even neighbour 2^(emax + 1), which does not exist, hence inf); subnormals and signed zeros as
    IEEE. Unlike ``values.to(float16 or bfloat16)``, which rounds through float32 first, this never
    rounds twice. Non-finite values pass through.
    """
    fmt = _check_dtype(dtype, "dtype")
    v = values.detach().to(torch.float64)
    if dtype == torch.float64:
        return v.clone()
    step = ulp(v, dtype)
    # v / step and q * step scale by powers of two (exact); |q| <= 2^p, so torch.round, which
    # rounds half to even, is exact on it.
    rounded = torch.round(v / step) * step
    overflow = rounded.abs() > fmt.max_finite
    rounded = torch.where(overflow, torch.copysign(torch.full_like(v, math.inf), v), rounded)
    return torch.where(torch.isfinite(v), rounded, v)


def pre_rounding_bound(
    x: torch.Tensor, expected: torch.Tensor, *, out_dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """b_i of the model: how far the value a correct kernel finally rounds to ``out_dtype`` may lie from y_i.

    Float64, shape (M,), on the CPU; 0 where ``expected`` is not finite (those rows must match
    exactly). ``expected`` is :func:`reference.lse_reference` of ``x``. Computed where ``x`` is (a GPU
    does the float64 passes over a large input far faster than the host); only the (M,) result moves.
    """
    validate_input(x)
    _check_dtype(out_dtype, "out_dtype")
    rows, cols = x.shape
    if rows == 0:
        return torch.zeros(0, dtype=torch.float64)
    if cols == 0:
        return torch.zeros(rows, dtype=torch.float64)
    values = x.detach().to(torch.float64)
    y = expected.detach().to(device=x.device, dtype=torch.float64)
    finite_y = torch.isfinite(y)
    finite = torch.isfinite(values)
    row_max = torch.where(finite, values, torch.full_like(values, -math.inf)).amax(dim=1)
    # On rows with a finite result the row max is finite; elsewhere use 0 so no term turns NaN.
    shift = torch.where(finite_y, row_max, torch.zeros_like(row_max))
    shifted = values - shift[:, None]  # t_j <= 0
    significant = finite & (shifted >= -SIGNIFICANT_RANGE)
    magnitude = torch.where(significant, values.abs(), torch.zeros_like(values)).amax(dim=1)
    abs_y = torch.where(finite_y, y.abs(), torch.zeros_like(y))
    depth = math.ceil(math.log2(cols)) if cols > 1 else 0
    passes = math.ceil(cols / MIN_PARTIAL_SUMS)
    u_out = UNIT_ROUNDOFF[out_dtype]
    u_acc = UNIT_ROUNDOFF[ACCUMULATION_DTYPE]
    # Each product is formed separately: near float64's largest values a sum of magnitudes first
    # would overflow to inf.
    terms = (
        u_acc * abs_y
        + (4.0 * u_acc) * magnitude
        + u_acc * (2.0 * (depth + passes) + SIGNIFICANT_RANGE + FIXED_ULPS)
    )
    if u_out > UNIT_ROUNDOFF[x.dtype]:
        terms = terms + u_out * shift.abs()  # the max itself rounded to the output dtype
    if u_out > u_acc:
        terms = terms + _narrow_output_terms(shifted, significant, y - shift, cols, out_dtype)
    bound = SAFETY_FACTOR * terms
    return torch.where(finite_y, bound, torch.zeros_like(bound)).cpu()


def _narrow_output_terms(shifted, significant, log_sum, cols, out_dtype) -> torch.Tensor:
    """Roundings to a dtype narrower than float32 (torch's elementwise steps in D), per row, in log S."""
    u_out = UNIT_ROUNDOFF[out_dtype]
    fmt = _FORMATS[out_dtype]
    zero = torch.zeros_like(shifted)
    t = torch.where(significant, shifted, zero)
    weights = torch.where(significant, torch.exp(t), zero)
    total = weights.sum(dim=1)  # S over the terms that matter, in [1, N]
    total = torch.where(total > 0, total, torch.ones_like(total))  # rows with no finite result
    # E = log(sum_j p_j exp(u |t_j|)) = log1p(sum_j p_j expm1(u |t_j|)): every argument rounded up
    # by its full rounding error, the largest move of log S (rounding down moves it less, by Jensen).
    moved = (weights * torch.expm1(-u_out * t)).sum(dim=1)
    arguments = torch.log1p(moved / total)
    # The max's own term is exp(0) = 1 in every dtype: only the other N - 1 terms, which carry the
    # share 1 - 1/S of the sum, round (u_out each) or underflow (at most half D's smallest subnormal
    # each); the sum S itself rounds once more (u_out).
    others = 1.0 - 1.0 / total
    half_smallest_subnormal = 2.0 ** (fmt.min_exponent - fmt.precision)
    underflow = (cols - 1) * half_smallest_subnormal / total
    log_sum = torch.where(torch.isfinite(log_sum), log_sum.abs(), torch.zeros_like(log_sum))
    return u_out * (log_sum + others + 1.0) + underflow + arguments


def acceptance_interval(
    expected: torch.Tensor, bound: torch.Tensor, *, out_dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """(low, high): [down_D(y - b), up_D(y + b)] in ``out_dtype`` D, as float64 CPU tensors.

    ``bound`` is :func:`pre_rounding_bound`. Each end is y -+ b rounded to D to nearest, then moved
    to D's next value outwards where that rounding moved it inwards (the final rounding to D may be
    directed; see the module docstring), never past D's largest finite value. Either end may be
    +-inf where y +- b lies beyond D's overflow threshold; where y is not finite both ends are y
    itself (NaN for NaN: only NaN matches).
    """
    _check_dtype(out_dtype, "out_dtype")
    y = expected.detach().to(device="cpu", dtype=torch.float64)
    b = bound.detach().to(device="cpu", dtype=torch.float64)
    finite = torch.isfinite(y)
    low = _outward(round_to_dtype(y - b, out_dtype), y - b, out_dtype, down=True)
    high = _outward(round_to_dtype(y + b, out_dtype), y + b, out_dtype, down=False)
    return torch.where(finite, low, y), torch.where(finite, high, y)


def _outward(rounded: torch.Tensor, exact: torch.Tensor, dtype: torch.dtype, *, down: bool) -> torch.Tensor:
    """``rounded`` (= round_D(exact)), or D's next value beyond it where it lies on the inner side of
    ``exact``: the directed rounding of ``exact`` away from the interval's middle. Finite stays finite."""
    inner = rounded > exact if down else rounded < exact
    direction = torch.full_like(rounded, -math.inf if down else math.inf)
    stepped = torch.nextafter(rounded.to(dtype), direction.to(dtype)).to(torch.float64)
    move = inner & torch.isfinite(rounded) & torch.isfinite(stepped)
    return torch.where(move, stepped, rounded)


def in_interval(got: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """Row mask: ``low <= got <= high``, or NaN where the interval is NaN (a NaN row needs NaN)."""
    got = got.detach().to(device="cpu", dtype=torch.float64)
    return ((got >= low) & (got <= high)) | (torch.isnan(low) & torch.isnan(got))


def allowed_error(x: torch.Tensor, expected: torch.Tensor, *, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Per-row absolute allowance (float64, shape (M,), on the CPU) for a finite output of ``out_dtype``.

    b + ulp_D(|y| + b): no finite value of the acceptance interval lies farther from y (rounding
    y +- b to D outwards moves it by at most one ulp). It is the number to use where a single distance is
    needed (|got - y| <= allowance, the bounds check, metamorphic pairs); it cannot accept a +-inf
    that overflow makes correct: :func:`compare` does. 0 where ``expected`` is not finite.
    """
    bound = pre_rounding_bound(x, expected, out_dtype=out_dtype)
    return _allowance(expected.detach().to(device="cpu", dtype=torch.float64), bound, out_dtype)


def _allowance(y: torch.Tensor, bound: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    finite = torch.isfinite(y)
    # y near float64's largest value: |y| + b rounds to inf, whose ulp (inf) would accept anything.
    reach = (torch.where(finite, y.abs(), torch.zeros_like(y)) + bound).clamp(max=torch.finfo(torch.float64).max)
    allowance = bound + ulp(reach, out_dtype)
    return torch.where(finite, allowance, torch.zeros_like(allowance))


def is_close(got: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor) -> torch.Tensor:
    """Row mask of agreement by distance: within ``bound`` (:func:`allowed_error`) where ``expected``
    is finite, identical otherwise. :func:`compare` judges in the output dtype instead, which also
    accepts a +-inf that overflow makes correct."""
    got = got.to(torch.float64)
    both_nan = torch.isnan(got) & torch.isnan(expected)
    finite = torch.isfinite(expected)
    same_inf = ~finite & (got == expected)
    within = finite & torch.isfinite(got) & ((got - expected).abs() <= bound)
    return both_nan | same_inf | within


@dataclass(frozen=True)
class Comparison:
    """A candidate's output set against the oracle, row by row, judged in its output dtype.

    Tensors are float64 / bool, shape (M,), on the CPU. ``expected`` is the oracle y; ``got`` the
    output converted (exactly) to float64; ``pre_rounding_bound`` is the model's b; ``low``/``high``
    the acceptance interval [round_D(y - b), round_D(y + b)]; ``bound`` the absolute allowance
    b + ulp_D(|y| + b) / 2 (see :func:`allowed_error`); ``error`` |got - y|, 0 where a non-finite
    output is accepted (an exact match, or an overflow the interval allows), inf for NaN where a
    number was due; ``mismatch`` marks rows outside the interval.
    """

    expected: torch.Tensor
    got: torch.Tensor
    bound: torch.Tensor
    error: torch.Tensor
    mismatch: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor
    pre_rounding_bound: torch.Tensor
    out_dtype: torch.dtype

    @property
    def mismatches(self) -> int:
        return int(self.mismatch.sum())

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def first_mismatch(self) -> int | None:
        rows = torch.nonzero(self.mismatch).flatten()
        return int(rows[0]) if rows.numel() else None

    def ulps(self, row: int | None = None) -> torch.Tensor | float:
        """The error in ulps of the output dtype (:func:`ulp`) at the larger in magnitude of the
        expected and the returned value: near each other that is the expected value's ulp, and an
        error from an expected 0 reads in the returned value's units, not in subnormal spacings
        (0.69 for 0 is 1.2e7 ulps of float32, not 5e44). Inf for a non-finite expected value that
        was missed. One row gives a float, no row all rows."""
        finite = lambda t: torch.where(torch.isfinite(t), t, torch.zeros_like(t)).abs()  # noqa: E731
        spacing = ulp(torch.maximum(finite(self.expected), finite(self.got.to(self.expected.dtype))), self.out_dtype)
        return _pick(torch.where(self.error == 0, torch.zeros_like(self.error), self.error / spacing), row)

    def allowance(self, row: int | None = None) -> torch.Tensor | float:
        """How far the interval reaches from y on the side the output lies: high - y above, y - low below.

        0 where the interval does not reach that side at all (y itself rounds away from it, e.g. to
        +inf beyond D's range), so any output there is an infinite multiple of it.
        """
        above = self.got > self.expected
        reach = torch.where(above, self.high - self.expected, self.expected - self.low).clamp(min=0.0)
        return _pick(torch.where(torch.isfinite(self.expected), reach, torch.zeros_like(reach)), row)

    def ratio(self, row: int | None = None) -> torch.Tensor | float:
        """The error in multiples of :meth:`allowance`: above 1 exactly when a finite output is rejected."""
        error, reach = self.error, self.allowance()
        ratio = torch.where(error == 0, torch.zeros_like(error), error / reach)  # x / 0 = inf: no room
        return _pick(ratio, row)

    def explain(self, row: int) -> str:
        """One line for a failure message: the error in ulps and in allowances, and the interval."""
        dtype = str(self.out_dtype).replace("torch.", "")
        interval = f"accepted [{float(self.low[row])!r}, {float(self.high[row])!r}] in {dtype}"
        if not math.isfinite(float(self.expected[row])):
            return f"a non-finite expected value must be matched exactly ({interval})"
        return (f"{float(self.error[row]):.6g} = {self.ulps(row):.3g} ulps of {dtype} = {self.ratio(row):.3g} x the "
                f"allowance {self.allowance(row):.6g}; {interval}")


def _pick(values: torch.Tensor, row: int | None) -> torch.Tensor | float:
    return values if row is None else float(values[row])


def base2_bound(x: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor, *,
                out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """b of the model for a kernel that returns its LSE in base 2, log2(sum_j e^x_j) = y / ln 2 (the
    base-2 LSEs of FlashInfer and TensorRT-LLM), from ``bound``, the natural-log b of ``x``.

    Such a kernel computes in base-2 units what a natural-log one computes in natural units: its
    exponent arguments, its sum and its log2 carry the same relative errors, so each term of b
    scales by log2(e). What it does besides is one more rounding of the max scaled by log2(e)
    (u |m| log2(e), where it scales x and m before subtracting) or of the result scaled by log2(e)
    (u |y| log2(e), a natural-log LSE converted at the end), u the coarser of the accumulation's and
    the output's unit roundoff, with the margin K. 0 where ``expected`` (the natural-log oracle) is
    not finite.
    """
    values = x.detach().to(torch.float64)
    y = expected.detach().to(device="cpu", dtype=torch.float64)
    finite_y = torch.isfinite(y)
    if values.shape[1]:
        row_max = torch.where(torch.isfinite(values), values, torch.full_like(values, -math.inf)).amax(dim=1).cpu()
    else:
        row_max = torch.zeros(values.shape[0], dtype=torch.float64)
    unit = max(UNIT_ROUNDOFF[ACCUMULATION_DTYPE], UNIT_ROUNDOFF[out_dtype])
    scaled = (torch.where(finite_y, row_max.abs(), torch.zeros_like(y)) + torch.where(finite_y, y.abs(), torch.zeros_like(y)))
    total = (bound.to(torch.float64) + SAFETY_FACTOR * unit * scaled) * LOG2E
    return torch.where(finite_y, total, torch.zeros_like(total))


def compare(x: torch.Tensor, got: torch.Tensor, *, expected: torch.Tensor | None = None,
            base: str | int = "e") -> Comparison:
    """Compare a candidate's output ``got`` for input ``x`` with the oracle, in ``got``'s dtype.

    ``got`` must already have shape (M,); its dtype is the D of the model (a dtype outside the
    supported four is judged as float32). ``expected`` (the natural-log oracle) may be passed when
    the caller computed it already (e.g. in another process). ``base=2``: ``got`` is the LSE in base
    2, log2(sum_j e^x_j), judged against y / ln 2 within :func:`base2_bound`. The oracle and the bound
    are computed on ``x``'s device; the Comparison holds CPU tensors, in the base's units.
    """
    base = check_base(base)
    if expected is None:
        expected = lse_reference(x)  # where x is: on a GPU, the float64 passes cost microseconds
    out_dtype = got.dtype if got.dtype in UNIT_ROUNDOFF else torch.float32
    bound = pre_rounding_bound(x, expected, out_dtype=out_dtype)
    if base == 2:
        bound = base2_bound(x, expected, bound, out_dtype=out_dtype)
    expected = expected.detach().to(device="cpu", dtype=torch.float64) * (LOG2E if base == 2 else 1.0)
    low, high = acceptance_interval(expected, bound, out_dtype=out_dtype)
    got64 = got.detach().to(device="cpu").to(torch.float64)
    accepted = in_interval(got64, low, high)
    error = torch.where(accepted & ~torch.isfinite(got64), torch.zeros_like(got64), (got64 - expected).abs())
    error = torch.nan_to_num(error, nan=math.inf, posinf=math.inf)  # nan_to_num's default maps inf to max
    return Comparison(
        expected=expected, got=got64, bound=_allowance(expected, bound, out_dtype), error=error,
        mismatch=~accepted, low=low, high=high, pre_rounding_bound=bound, out_dtype=out_dtype,
    )
