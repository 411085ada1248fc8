"""The tolerance model of the attention-state merge: how far a correct float32 kernel's (v, s) may lie from the oracle.

Derived from the numerics, as reference/tolerance.py derives the row LSE's, not tuned on results. A
correct kernel reads the states' s_k (float32) and v_k (converted exactly), and computes in float32
(unit roundoff u):

    t_k = s_k - r,   e_k = exp(t_k),   Z = sum_k e_k,   s_out = m + log Z,   v_out = sum_k w~_k v_k

where r is the max m of the s_k (vLLM, FlashInfer: then w~_k = e_k / Z, renormalized) or the merged
s_out itself (FlashAttention's split-KV combine: w~_k = exp(s_k - s_out)); exp may be exp2 of x log2(e)
with the scaling before or after the subtraction; a combine of S splits may be S - 1 pairwise merges in
sequence (FlashInfer's merge_states). Per (t, h), with A = max |s_k| over the non-empty states and
A' = A + log S (so |s_out| <= A'; a merge is S = 2):

* s_out: each argument t_k relative to m carries u (|s_k| + |m| + 2 |t_k|) <= 6 u A' (s_k and m scaled
  by log2 e before the subtraction, the subtraction, a scaling after it; |t_k| <= 2 A'), and log Z
  moves by at most the largest of them; Z's S - 1 additions (doubled for an online kernel's rescaling),
  exp and log a few ulps each, and the final add u |s_out|:
      e_s = u ( |s_out| + 6 A' + 2 (S - 1) + 16 )
* the exponent argument of a weight: 6 u A' as above, plus e_s where r = s_out:  delta = 6 u A' + e_s.
  It grows with |s|: about 1e-4 at |s| = 100, 1e-2 at |s| = 1e4, and past |s| ~ 1e6 float32 cannot
  place a weight at all;
* each weight's relative error: e_k / Z moves by a factor of at most e^(2 delta) (numerator and sum),
  once per merge step, so  eps_w = expm1(2 (S - 1) delta) + (S + 1) u  (Z's additions, the division;
  a base-2 argument off by delta moves a weight by 2^delta < e^delta: the same bound holds). Every form
  keeps 0 <= w~_k <= 1 (s_k <= m <= r and rounding is monotone), so a weight is off by at most
  dw_k = min(w_k eps_w, 1) + eta,  eta = 2^-126: a weight flushed to zero (a GPU's fast exp flushes);
* the sum: each product w~_k v_k rounds (u), the S - 1 additions ((S - 1) u) of terms at most
  (w_k + dw_k) |v_k|, and each product and partial sum may flush (eta):
      b_v = K ( sum_k dw_k |v_k| + S u sum_k (w_k + dw_k) |v_k| + S eta ),   b_s = K e_s
  over the non-empty states (a correct kernel gives an empty state the weight 0 exactly);
* the final rounding of v to its dtype D (v_a's; to nearest or directed: Triton's interpreter
  truncates to bfloat16) and of s to float32 moves each by at most one ulp at the farthest value:
      allowance_v = b_v + ulp_D(|v| + b_v),   allowance_s = b_s + ulp_32(|s| + b_s).

K = 2 is the margin for the constants the derivation rounds. Non-finite oracle values carry no
tolerance: NaN must come back as NaN, -inf as -inf (two empty states), +inf as +inf; the one non-finite
answer accepted for a finite value is an infinity of the right sign where |v| + b reaches the output
dtype's overflow threshold (max + ulp(max) / 2: a correct kernel's rounding to nearest overflows there).

What stays outside: weights not renormalized against the max (w_k = exp(s_k - m) alone: up to S times
too much), exp of the wrong base (2^t for e^t: the smaller weight off by 12% at |s_a - s_b| = 0.6, 24%
at 1), a finite sentinel for an empty state (s of two empty states must be -inf), swapped states, a
sum kept in a 16-bit dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .errors import InvalidArgument
from .merge_oracle import (
    check_base,
    combine_reference,
    merge_stacked,
    merge_state_reference,
    refuse_positive_infinity,
    validate_combine_inputs,
    validate_merge_inputs,
    weights_and_lse,
)
from .tolerance import UNIT_ROUNDOFF, ulp

SAFETY_FACTOR = 2.0  # K above
FIXED_ULPS = 16.0  # exp, log and the final add, a few ulps each
ARGUMENT_ULPS = 6.0  # an exponent argument's error in units of u A'
FLUSH = 2.0**-126  # float32's smallest normal number: what a flush to zero loses, at most
_U = UNIT_ROUNDOFF[torch.float32]


def _bounds(values: torch.Tensor, lses: torch.Tensor, base, lse_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(b_v, b_s) of the model for states stacked along dim 0, before the final rounding; float64, CPU."""
    splits = lses.shape[0]
    if splits == 0:
        return torch.zeros(values.shape[1:], dtype=torch.float64), torch.zeros(lses.shape[1:], dtype=torch.float64)
    zero = torch.zeros_like(lses)
    present = torch.isfinite(lses)  # +inf was refused; NaN positions need no bound (NaN is due)
    weights, _ = weights_and_lse(lses, base=base)
    weights = torch.where(present, weights, zero)
    magnitude = torch.where(present[..., None] & torch.isfinite(values), values.abs(), torch.zeros_like(values))
    reach = torch.where(present, lses.abs(), zero).amax(dim=0) + math.log(splits)  # A'
    abs_s = torch.where(torch.isfinite(lse_out), lse_out.abs(), torch.zeros_like(lse_out))
    lse_error = _U * (abs_s + ARGUMENT_ULPS * reach + 2.0 * (splits - 1) + FIXED_ULPS)  # e_s
    delta = ARGUMENT_ULPS * _U * reach + lse_error
    relative = torch.expm1(2.0 * (splits - 1) * delta) + (splits + 1) * _U  # eps_w: inf once delta is large
    # w * inf is NaN where w = 0: an absent weight has no error to bound.
    scaled = torch.where(weights > 0, weights * relative, torch.zeros_like(weights))
    off = torch.where(present, torch.clamp(scaled, max=1.0) + FLUSH, zero)  # dw_k
    bound_v = ((off[..., None] * magnitude).sum(dim=0)
               + splits * _U * ((weights + off)[..., None] * magnitude).sum(dim=0) + splits * FLUSH)
    return SAFETY_FACTOR * bound_v, SAFETY_FACTOR * lse_error


def _with_final_rounding(expected: torch.Tensor, bound: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """b + ulp_D(|y| + b) where y is finite, 0 elsewhere (non-finite values must match exactly)."""
    finite = torch.isfinite(expected)
    magnitude = torch.where(finite, expected.abs(), torch.zeros_like(expected))
    # Near float64's largest value |y| + b rounds to inf, whose ulp would accept anything.
    reach = (magnitude + bound).clamp(max=torch.finfo(torch.float64).max)
    allowance = bound + ulp(reach, dtype)
    return torch.where(finite, allowance, torch.zeros_like(allowance))


def _check_out_dtype(out_dtype: object) -> torch.dtype:
    if out_dtype not in UNIT_ROUNDOFF:
        names = ", ".join(str(d) for d in UNIT_ROUNDOFF)
        raise InvalidArgument(f"out_dtype={out_dtype!r} is not a supported floating dtype; expected one of {names}.")
    return out_dtype


def _allowances(values, lses, base, out_dtype, expected) -> tuple[torch.Tensor, torch.Tensor]:
    values, lses = _cpu64(values), _cpu64(lses)
    expected_v, expected_s = merge_stacked(values, lses, base=base) if expected is None else expected
    expected_v, expected_s = _cpu64(expected_v), _cpu64(expected_s)
    bound_v, bound_s = _bounds(values, lses, base, expected_s)
    return (_with_final_rounding(expected_v, bound_v, out_dtype),
            _with_final_rounding(expected_s, bound_s, torch.float32))


def merge_allowance(v_a, s_a, v_b, s_b, *, base: str | int = "e", out_dtype: torch.dtype | None = None,
                    expected: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-element absolute allowances (allowance_v (T, H, D), allowance_s (T, H)), float64 on the CPU.

    allowance_v is for v in ``out_dtype`` (default v_a's dtype), allowance_s for s in float32; 0
    where the oracle's value is not finite. ``expected`` is :func:`merge_state_reference`'s result
    when the caller has it already.
    """
    validate_merge_inputs(v_a, s_a, v_b, s_b)
    base = check_base(base)
    refuse_positive_infinity(s_a, "s_a")
    refuse_positive_infinity(s_b, "s_b")
    out_dtype = _check_out_dtype(v_a.dtype if out_dtype is None else out_dtype)
    values = torch.stack([v_a.detach().cpu(), v_b.detach().cpu()])
    lses = torch.stack([s_a.detach().cpu().double(), s_b.detach().cpu().double()])
    return _allowances(values, lses, base, out_dtype, expected)


def combine_allowance(v, s, *, base: str | int = "e", out_dtype: torch.dtype | None = None,
                      expected: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`merge_allowance` for a combine of S splits: v (S, T, H, D), s (S, T, H)."""
    validate_combine_inputs(v, s)
    base = check_base(base)
    refuse_positive_infinity(s, "s")
    out_dtype = _check_out_dtype(v.dtype if out_dtype is None else out_dtype)
    return _allowances(v, s, base, out_dtype, expected)


@dataclass(frozen=True)
class MergeMismatch:
    """One element outside the tolerance: ``output`` is "v" or "s", ``index`` its position."""

    output: str
    index: tuple[int, ...]
    expected: float
    got: float
    allowance: float

    @property
    def error(self) -> float:
        """|got - expected|; inf where a non-finite value was missed or NaN came back for a number."""
        distance = abs(self.got - self.expected)
        return math.inf if math.isnan(distance) else distance

    @property
    def ratio(self) -> float:
        """The error in multiples of the allowance (inf where there is no allowance)."""
        return self.error / self.allowance if self.allowance > 0 else math.inf

    def explain(self) -> str:
        where = f"{self.output}[{', '.join(str(i) for i in self.index)}]"
        values = f"expected {self.expected!r}, got {self.got!r}"
        if not math.isfinite(self.expected):
            return f"{where}: {values}: a non-finite expected value must be matched exactly"
        return f"{where}: {values}, error {self.error:.6g} = {self.ratio:.3g} x the allowance {self.allowance:.6g}"


@dataclass(frozen=True)
class MergeComparison:
    """A candidate's merged (v, s) against the oracle, element by element.

    ``ok_v`` (T, H, D) and ``ok_s`` (T, H) are bool masks of the elements within the tolerance;
    ``error_v``/``error_s`` are |got - expected| in float64 (0 for an accepted non-finite value, inf
    for a missed one); ``allowance_v``/``allowance_s`` the allowances judged against; ``worst`` the
    element furthest outside, in multiples of its allowance (None when all are within).
    """

    ok_v: torch.Tensor
    ok_s: torch.Tensor
    error_v: torch.Tensor
    error_s: torch.Tensor
    allowance_v: torch.Tensor
    allowance_s: torch.Tensor
    worst: MergeMismatch | None

    @property
    def ok(self) -> bool:
        return self.worst is None

    @property
    def mismatches(self) -> int:
        return int((~self.ok_v).sum()) + int((~self.ok_s).sum())

    def explain(self) -> str:
        """One line for a failure message: the counts, and the worst element with expected, got, allowance."""
        if self.worst is None:
            return f"all {self.ok_v.numel()} elements of v and {self.ok_s.numel()} of s within the tolerance"
        return (f"{int((~self.ok_v).sum())} of {self.ok_v.numel()} elements of v and {int((~self.ok_s).sum())} of "
                f"{self.ok_s.numel()} of s outside the tolerance; worst {self.worst.explain()}")


def _overflow_reach(dtype: torch.dtype) -> float:
    """The |y| + allowance from which an infinity is a correct answer in ``dtype``; inf for other dtypes.

    IEEE rounds to inf from max + ulp(max) / 2 on, and a correct kernel's value reaches |y| + b; up
    there allowance = b + ulp(max), so |y| + b >= max + ulp(max) / 2 reads |y| + allowance >= max +
    3 ulp(max) / 2. (A directed rounding never turns a finite value into inf: as in reference.tolerance.)
    """
    if dtype not in UNIT_ROUNDOFF:
        return math.inf
    largest = torch.finfo(dtype).max
    return largest + 1.5 * ulp(largest, dtype)


def _judge(expected, got, allowance) -> tuple[torch.Tensor, torch.Tensor]:
    """(ok mask, error) of one output: within the allowance where finite, identical where not."""
    got64 = got.detach().to(device="cpu").to(torch.float64)
    finite = torch.isfinite(expected)
    exact = (got64 == expected) | (torch.isnan(got64) & torch.isnan(expected))
    distance = (got64 - expected).abs()
    close = finite & torch.isfinite(got64) & (distance <= allowance)
    # An infinity of the right sign is what a correct kernel's rounding gives where y + b overflows.
    overflow = finite & torch.isinf(got64) & (got64 * expected > 0)
    overflow &= expected.abs() + allowance >= _overflow_reach(got.dtype)
    ok = torch.where(finite, close | overflow, exact)
    error = torch.where(ok & ~torch.isfinite(got64), torch.zeros_like(distance), distance)
    return ok, torch.nan_to_num(error, nan=math.inf, posinf=math.inf)  # nan_to_num maps inf to max by default


def _worst(output, ok, error, allowance, expected, got) -> tuple[float, MergeMismatch | None]:
    """(ratio, mismatch) of the element furthest outside the tolerance, the first of equals."""
    if bool(ok.all()):
        return -1.0, None
    ratio = torch.where(error == 0, torch.zeros_like(error), error / allowance)  # x / 0 = inf: no room
    ratio = torch.where(ok, torch.full_like(ratio, -1.0), ratio)
    flat = int(ratio.flatten().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), ratio.shape))
    got64 = got.detach().to(device="cpu").to(torch.float64)
    mismatch = MergeMismatch(output=output, index=index, expected=float(expected[index]),
                             got=float(got64[index]), allowance=float(allowance[index]))
    return float(ratio[index]), mismatch


def _check_same_shape(name: str, value: object, like: object, like_name: str) -> None:
    for label, tensor in ((name, value), (like_name, like)):
        if not isinstance(tensor, torch.Tensor):
            raise InvalidArgument(f"{label}={type(tensor).__name__} object; expected a torch.Tensor.")
    if value.shape != like.shape:
        raise InvalidArgument(
            f"{name}.shape={tuple(value.shape)}; expected {tuple(like.shape)}, the shape of {like_name}: "
            "v is (T, H, D) and s is (T, H), as the oracle returns them."
        )


def _cpu64(value: torch.Tensor) -> torch.Tensor:
    return value.detach().to(device="cpu", dtype=torch.float64)


def compare_merge(expected_v, expected_s, got_v, got_s, allowance_v, allowance_s) -> MergeComparison:
    """Judge a candidate's (got_v, got_s) against the oracle's (expected_v, expected_s).

    A finite expected value accepts |got - expected| <= allowance (and an infinity of its sign where
    that reach passes got's dtype's overflow threshold); a non-finite one only itself (NaN for NaN).
    Allowances come from :func:`merge_allowance` or :func:`combine_allowance`.
    """
    _check_same_shape("got_v", got_v, expected_v, "expected_v")
    _check_same_shape("got_s", got_s, expected_s, "expected_s")
    _check_same_shape("allowance_v", allowance_v, expected_v, "expected_v")
    _check_same_shape("allowance_s", allowance_s, expected_s, "expected_s")
    expected_v, expected_s = _cpu64(expected_v), _cpu64(expected_s)
    allowance_v, allowance_s = _cpu64(allowance_v), _cpu64(allowance_s)
    ok_v, error_v = _judge(expected_v, got_v, allowance_v)
    ok_s, error_s = _judge(expected_s, got_s, allowance_s)
    ratio_v, worst_v = _worst("v", ok_v, error_v, allowance_v, expected_v, got_v)
    ratio_s, worst_s = _worst("s", ok_s, error_s, allowance_s, expected_s, got_s)
    worst = worst_v if ratio_v > ratio_s else worst_s  # the LSE first on a tie: a wrong s explains its v
    return MergeComparison(ok_v=ok_v, ok_s=ok_s, error_v=error_v, error_s=error_s,
                           allowance_v=allowance_v, allowance_s=allowance_s, worst=worst)


def check_merge(v_a, s_a, v_b, s_b, got_v, got_s, *, base: str | int = "e") -> MergeComparison:
    """Oracle, allowances and comparison in one call: a merge kernel's output for these inputs, judged."""
    expected = merge_state_reference(v_a, s_a, v_b, s_b, base=base)
    allowance_v, allowance_s = merge_allowance(v_a, s_a, v_b, s_b, base=base, expected=expected)
    return compare_merge(*expected, got_v, got_s, allowance_v, allowance_s)


def check_combine(v, s, got_v, got_s, *, base: str | int = "e") -> MergeComparison:
    """:func:`check_merge` for a combine of S splits: v (S, T, H, D), s (S, T, H)."""
    expected = combine_reference(v, s, base=base)
    allowance_v, allowance_s = combine_allowance(v, s, base=base, expected=expected)
    return compare_merge(*expected, got_v, got_s, allowance_v, allowance_s)
