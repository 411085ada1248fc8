"""The tolerance model: correct kernels stay inside it in every output dtype; real errors do not.

Four parts: the IEEE rounding the acceptance interval is built with (checked bit for bit against an
exhaustive grid, numpy and mpmath), the bound's terms (against an exact mpmath evaluation), correct
implementations written many ways (inside), and the canonical bugs (outside).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import reference
import reference.tolerance as tolerance
from reference import (
    UNIT_ROUNDOFF,
    InvalidArgument,
    acceptance_interval,
    allowed_error,
    compare,
    in_interval,
    is_close,
    lse,
    lse_reference,
    pre_rounding_bound,
    round_to_dtype,
    ulp,
)

try:  # scipy is installed where the test extras are, but is not one of them
    import scipy.special as scipy_special
except ImportError:  # pragma: no cover
    scipy_special = None

INF, NAN = math.inf, math.nan
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
NARROW = [F16, BF16]
DTYPES = [F16, BF16, F32, F64]
SIGNIFICAND_BITS = {F16: 11, BF16: 8, F32: 24, F64: 53}  # IEEE 754 binary16, bfloat16, binary32
F32_MAX, F32_OVERFLOW = (2 - 2.0**-23) * 2.0**127, (2 - 2.0**-24) * 2.0**127


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


# --------------------------------------------------------------------------------------------
# IEEE rounding to a dtype, and its ulp


def _non_negative_grid(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Every finite non-negative value of a 16-bit dtype, ascending (as float64), and its bit pattern."""
    patterns = torch.arange(0x8000, dtype=torch.int32)
    values = patterns.to(torch.int16).view(dtype).to(F64)  # exact: every 16-bit value is a float64
    finite = torch.isfinite(values)
    return values[finite], patterns[finite]


@pytest.mark.parametrize("dtype", NARROW, ids=_name)
def test_rounding_matches_ieee_at_every_16_bit_value_and_midpoint(dtype):
    values, patterns = _non_negative_grid(dtype)
    lower, upper = values[:-1], values[1:]
    midpoint = (lower + upper) / 2  # exact in float64: one bit more than the dtype has
    even = torch.where(patterns[:-1] % 2 == 0, lower, upper)  # ties go to the even significand
    for sign in (1.0, -1.0):
        assert torch.equal(round_to_dtype(sign * values, dtype), sign * values)
        assert torch.equal(round_to_dtype(sign * midpoint, dtype), sign * even)
        below = torch.nextafter(midpoint, torch.zeros_like(midpoint))
        above = torch.nextafter(midpoint, torch.full_like(midpoint, INF))
        assert torch.equal(round_to_dtype(sign * below, dtype), sign * lower)
        assert torch.equal(round_to_dtype(sign * above, dtype), sign * upper)


def _random_float64(count: int, seed: int, *, low_exponent: int, high_exponent: int) -> torch.Tensor:
    """Signed float64 values with full 53-bit significands, exponents spread over [low, high)."""
    gen = torch.Generator().manual_seed(seed)
    significand = 1 + torch.rand(count, generator=gen, dtype=F64)
    exponent = torch.randint(low_exponent, high_exponent, (count,), generator=gen)
    sign = torch.where(torch.rand(count, generator=gen) < 0.5, -1.0, 1.0).to(F64)
    return sign * torch.ldexp(significand, exponent)


def test_float32_rounding_matches_numpy():
    # numpy's float64 -> float32 cast is the C conversion: one IEEE rounding (subnormals, overflow).
    values = _random_float64(20000, 1, low_exponent=-155, high_exponent=130)
    # float32 midpoints and their float64 neighbours: where a double rounding would show
    grid = values.to(F32).to(F64)
    step = torch.nextafter(values.to(F32), torch.full_like(values, INF).to(F32)).to(F64) - grid
    midpoints = (grid + step / 2)[torch.isfinite(step)]
    probes = torch.cat([values, midpoints, torch.nextafter(midpoints, torch.zeros_like(midpoints)),
                        torch.nextafter(midpoints, torch.full_like(midpoints, INF))])
    with np.errstate(over="ignore"):
        reference = torch.from_numpy(probes.numpy().astype(np.float32).astype(np.float64))
    assert torch.equal(round_to_dtype(probes, F32), reference)


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=_name)
def test_rounding_matches_mpmath_in_the_normal_range(dtype):
    info = torch.finfo(dtype)
    low, high = round(math.log2(info.smallest_normal)), math.floor(math.log2(info.max))
    values = _random_float64(1500, 2, low_exponent=low, high_exponent=high)
    got = round_to_dtype(values, dtype).tolist()
    # mpmath rounds to the working precision to nearest, ties to even, with no exponent limits:
    # exactly IEEE inside the normal range.
    with mpmath.workprec(SIGNIFICAND_BITS[dtype]):
        exact = [float(+mpmath.mpf(v)) for v in values.tolist()]
    assert got == exact


THRESHOLDS = [
    # dtype, largest finite value, overflow threshold max + ulp(max) / 2, smallest subnormal
    (F16, 65504.0, 65520.0, 2.0**-24),
    (BF16, (2 - 2.0**-7) * 2.0**127, (2 - 2.0**-8) * 2.0**127, 2.0**-133),
    (F32, F32_MAX, F32_OVERFLOW, 2.0**-149),
]


@pytest.mark.parametrize("dtype, largest, threshold, smallest", THRESHOLDS, ids=[_name(c[0]) for c in THRESHOLDS])
def test_overflow_and_underflow_thresholds(dtype, largest, threshold, smallest):
    assert largest == torch.finfo(dtype).max
    cases = [
        (largest, largest),
        (threshold, INF),  # the tie goes to the even neighbour 2^(emax+1), which is inf
        (math.nextafter(threshold, 0), largest),
        (math.nextafter(threshold, INF), INF),
        (1e308, INF),
        (smallest / 2, 0.0),  # tie between 0 (even) and the smallest subnormal
        (math.nextafter(smallest / 2, 1), smallest),
        (1.5 * smallest, 2 * smallest),  # tie: 2 * smallest has the even significand
        (math.nextafter(1.5 * smallest, 0), smallest),
    ]
    values = torch.tensor([value for value, _ in cases], dtype=F64)
    expected = torch.tensor([result for _, result in cases], dtype=F64)
    assert torch.equal(round_to_dtype(values, dtype), expected)
    assert torch.equal(round_to_dtype(-values, dtype), -expected)
    # torch's own .to() rounds through float32 for the 16-bit dtypes; one rounding must not:
    assert round_to_dtype(torch.tensor([1 + 2.0**-SIGNIFICAND_BITS[dtype] + 2.0**-40], dtype=F64), dtype).item() \
        == 1 + 2.0 ** (1 - SIGNIFICAND_BITS[dtype])


@pytest.mark.parametrize("dtype", NARROW, ids=_name)
def test_ulp_is_the_gap_to_the_next_value(dtype):
    values, _ = _non_negative_grid(dtype)
    gaps = values[1:] - values[:-1]
    assert torch.equal(ulp(values[:-1], dtype), gaps)
    assert torch.equal(ulp(-values[:-1], dtype), gaps)


def test_ulp_values():
    assert ulp(1.0, F32) == 2.0**-23 and ulp(1.0, F16) == 2.0**-10 and ulp(1.0, BF16) == 2.0**-7
    assert ulp(1.0, F64) == 2.0**-52
    assert ulp(math.nextafter(2.0, 0), F16) == 2.0**-10 and ulp(2.0, F16) == 2.0**-9
    assert ulp(0.0, F16) == 2.0**-24 and ulp(2.0**-20, F16) == 2.0**-24  # subnormal spacing
    assert ulp(65504.0, F16) == 32.0 and ulp(1e300, F32) == 2.0**104  # beyond the range: the top binade
    assert ulp(-INF, F32) == INF and math.isnan(ulp(NAN, F32))
    tensor = ulp(torch.tensor([1.0, 3.0]), BF16)
    assert tensor.dtype == F64 and tensor.tolist() == [2.0**-7, 2.0**-6]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ulp(1.0, torch.int32), "dtype=torch.int32 is not a supported floating dtype"),
        (lambda: round_to_dtype(torch.zeros(1), torch.float8_e4m3fn), "dtype=torch.float8_e4m3fn"),
        (lambda: allowed_error(torch.zeros(1, 2), torch.zeros(1), out_dtype=torch.int8), "out_dtype=torch.int8"),
    ],
    ids=["ulp", "round_to_dtype", "allowed_error"],
)
def test_unsupported_dtypes_are_named(call, message):
    with pytest.raises(InvalidArgument, match=message):
        call()


# --------------------------------------------------------------------------------------------
# The bound's terms


def test_bound_terms():
    x = torch.tensor([[0.0, 0.0], [1e6, 1e6], [0.0, -1e30]])
    bound = pre_rounding_bound(x, lse_reference(x)).tolist()
    assert bound[1] > 100 * bound[0]  # grows with the magnitude of the entries that matter
    # -1e30 is far below the max: exp underflows to 0 for every kernel, so it earns no tolerance.
    assert bound[2] == pytest.approx(bound[0], rel=0.01)
    longer = torch.zeros(1, 4096)
    assert pre_rounding_bound(longer, lse_reference(longer)).item() > bound[0]


def _exact_narrow_terms(row: list[float], dtype: torch.dtype) -> float:
    """u_D (|log S| + 2 - 1/S) + (N - 1) eta_D / S + log(sum_j p_j exp(u_D |t_j|)), 50 digits."""
    u = mpmath.mpf(UNIT_ROUNDOFF[dtype])
    info = torch.finfo(dtype)
    eta = mpmath.mpf(info.smallest_normal) * mpmath.mpf(info.eps) / 2  # half the smallest subnormal
    with mpmath.workdps(50):
        m = max(row)
        t = [mpmath.mpf(v) - mpmath.mpf(m) for v in row]
        total = mpmath.fsum(mpmath.exp(tj) for tj in t)
        arguments = mpmath.log(mpmath.fsum(mpmath.exp(tj) * mpmath.exp(-u * tj) for tj in t) / total)
        return float(u * (mpmath.log(total) + 2 - 1 / total) + (len(row) - 1) * eta / total + arguments)


@pytest.mark.parametrize("dtype", NARROW, ids=_name)
def test_narrow_output_terms_are_the_derived_ones(dtype):
    gen = torch.Generator().manual_seed(3)
    scales = torch.tensor([[0.1], [1.0], [5.0], [20.0]], dtype=F64)
    x = (torch.randn(4, 50, generator=gen, dtype=F64) * scales).to(dtype)
    y = lse_reference(x)
    # With a float32 output the same input gets the float32 terms only; the difference is K times
    # the terms of a narrow output (the max of a narrow input is exact in it: no u_D |m|).
    extra = (pre_rounding_bound(x, y, out_dtype=dtype) - pre_rounding_bound(x, y, out_dtype=F32)).tolist()
    for row, got in zip(x.to(F64).tolist(), extra):
        assert got == pytest.approx(2.0 * _exact_narrow_terms(row, dtype), rel=1e-9)


def test_max_rounding_term_for_a_wider_input():
    x = torch.tensor([[1e6, 1e6 - 1.5], [-3e4, -3e4], [1e-3, 0.0]], dtype=F64)
    y = lse_reference(x)
    extra = (pre_rounding_bound(x, y, out_dtype=F32) - pre_rounding_bound(x, y, out_dtype=F64)).tolist()
    row_max = x.amax(dim=1).abs().tolist()
    assert extra == pytest.approx([2.0 * 2.0**-24 * m for m in row_max], rel=1e-9)


def test_bound_stays_finite_near_float64_max():
    x = torch.tensor([[1.7e308, 1.7e308], [1.79e308, -1.79e308], [-1.7e308, -1.7e308]], dtype=F64)
    y = lse_reference(x)
    for dtype in (F32, F64):
        assert torch.isfinite(pre_rounding_bound(x, y, out_dtype=dtype)).all()
        assert torch.isfinite(allowed_error(x, y, out_dtype=dtype)).all()


# --------------------------------------------------------------------------------------------
# Inputs that stress the model: scales, offsets, cancellation (y near 0 while m and log S are not)


RECIPES = ["normal", "cancellation", "minus log N", "dominant", "partly -inf", "all -inf"]


@st.composite
def lse_inputs(draw, dtypes=tuple(DTYPES)):
    dtype = draw(st.sampled_from(dtypes))
    rows = draw(st.integers(1, 6))
    cols = draw(st.sampled_from([1, 2, 3, 31, 32, 33, 100, 1000, 4097]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    scale = draw(st.sampled_from([1e-3, 0.1, 1.0, 3.0, 30.0]))
    offset = draw(st.sampled_from([0.0, -100.0, 30.0, 1e3, -1e4]))
    x = torch.randn(rows, cols, generator=gen, dtype=F64) * scale + offset
    for row in range(rows):
        recipe = draw(st.sampled_from(RECIPES))
        if recipe == "cancellation":
            # y lands within 0.1 of 0: |m| + |log S| far above |y|, the case torch loses ulps on
            target = draw(st.floats(-0.1, 0.1))
            x[row] = x[row] - lse_reference(x[row : row + 1].to(dtype))[0] + target
        elif recipe == "minus log N":
            x[row] = -math.log(cols)  # y = 0 exactly before the input's own rounding
        elif recipe == "dominant":
            x[row] = -5.0 * scale
            x[row, draw(st.integers(0, cols - 1))] = offset
        elif recipe == "partly -inf":
            x[row, : draw(st.integers(0, cols - 1))] = -INF
        elif recipe == "all -inf":
            x[row] = -INF
    return x.to(dtype)


def _explain_worst(comparison) -> str:
    row = comparison.first_mismatch()
    if row is None:
        row = int(comparison.ratio().argmax())
    return f"row {row}: expected {float(comparison.expected[row])!r}, got {float(comparison.got[row])!r}: " \
        + comparison.explain(row)


# --------------------------------------------------------------------------------------------
# Correct implementations, each a different way of rounding: all inside


def _torch_in_input_dtype(x):
    return torch.logsumexp(x, dim=1)  # rounds t, exp(t), S, log S and the sum to x's dtype


def _float32_then_output_dtype(x):
    return torch.logsumexp(x.float(), dim=1).to(x.dtype)  # one float32 computation, one final rounding


def _float64_then_torch_cast(x):
    return torch.logsumexp(x.double(), dim=1).to(x.dtype)  # torch's cast: float64 -> float32 -> 16-bit


def _rounds_max_and_log_sum(x):
    """The torch way in a kernel: float32 sum, then m and log S each rounded to x's dtype, then added."""
    v = x.float()
    row_max = v.amax(dim=1)
    shift = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    log_sum = torch.log(torch.exp(v - shift[:, None]).sum(dim=1))
    out = shift.to(x.dtype) + log_sum.to(x.dtype)  # a 16-bit add: float32 inside, one rounding
    return torch.where(torch.isfinite(row_max), out, row_max.to(x.dtype))


def _float32_exp2(x):
    """A float32 LSE in the exp2 form (x*log2(e) - m*log2(e)), sequential over 32 lanes."""
    v = x.float()
    m = v.amax(dim=1)
    shift = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    log2e = torch.tensor(1.4426950408889634, dtype=F32)
    terms = torch.exp2(v * log2e - (shift * log2e)[:, None])
    # 32 partial sums, each accumulated sequentially: the slowest summation the model allows.
    cols = v.shape[1]
    lanes = torch.nn.functional.pad(terms, (0, (-cols) % 32)).reshape(v.shape[0], -1, 32)
    acc = torch.zeros(v.shape[0], 32, dtype=F32)
    for step in range(lanes.shape[1]):
        acc = acc + lanes[:, step, :]
    out = shift + torch.log(acc.sum(dim=1))
    return torch.where(torch.isfinite(m), out, m)


def _float32_exp2_in_input_dtype(x):
    return _float32_exp2(x).to(x.dtype)


def _scipy_as_float32(x):
    return torch.from_numpy(scipy_special.logsumexp(x.double().numpy(), axis=1)).float()


CORRECT = [
    _torch_in_input_dtype,
    _float32_then_output_dtype,
    _float64_then_torch_cast,
    _rounds_max_and_log_sum,
    _float32_exp2,
    _float32_exp2_in_input_dtype,
    pytest.param(_scipy_as_float32, marks=pytest.mark.skipif(scipy_special is None, reason="needs scipy")),
]


@pytest.mark.parametrize("impl", CORRECT, ids=lambda f: f.__name__.strip("_"))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=lse_inputs())
def test_correct_implementations_are_inside(impl, x):
    comparison = compare(x, impl(x))
    assert comparison.ok, _explain_worst(comparison)


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_torch_logsumexp_in_every_dtype_on_seeded_inputs(dtype):
    # Fixed seeds in every dtype, rows long and short, cancellation included: torch's own result
    # in its input dtype is the false alarm this model was rebuilt for.
    for seed in range(6):
        gen = torch.Generator().manual_seed(seed)
        for cols in (2, 7, 100, 4096):
            x = torch.randn(32, cols, generator=gen, dtype=F64) * (0.3 + 10 * (seed % 3))
            x[::2] -= lse_reference(x[::2].to(dtype))[:, None]  # even rows: y near 0
            x = x.to(dtype)
            comparison = compare(x, torch.logsumexp(x, dim=1))
            assert comparison.ok, _explain_worst(comparison)


def test_the_float16_false_alarm_is_gone():
    # fuzz seed 0 shrank torch.logsumexp's float16 output to this; the float32 model flagged it.
    x = torch.tensor([[-2.171875, 0.0], [-2.57421875, 0.0]], dtype=F16)
    comparison = compare(x, torch.logsumexp(x, dim=1))
    assert comparison.ok
    assert comparison.ulps(0) > 4  # several ulps of y, from S = 1.114 rounded to float16
    assert comparison.ratio(0) < 0.5


def test_reference_kernel_cast_to_the_input_dtype_is_inside():
    gen = torch.Generator().manual_seed(4)
    for dtype in NARROW:
        x = (torch.randn(9, 300, generator=gen) * 4 - 1).to(dtype)
        assert compare(x, lse(x).to(dtype)).ok


# --------------------------------------------------------------------------------------------
# Overflow to +-inf in the output dtype: float64 input, float32 output


def _f64(*values):
    return torch.tensor([list(values)], dtype=F64)


OVERFLOW_CASES = [
    # (row, got in float32, accepted?)
    ((1.4713773936652055e308,), INF, True),  # far beyond float32: only inf is right
    ((1.4713773936652055e308,), F32_MAX, False),
    ((1.7e308, 1.7e308, 1.0), INF, True),
    ((1.7e308, 1.7e308, 1.0), F32_MAX, False),
    ((1e39, 1e39), INF, True),
    ((1e39, 1e39), F32_MAX, False),
    ((F32_OVERFLOW * (1 - 1e-8),), INF, True),  # y +- b straddles the threshold: both are right
    ((F32_OVERFLOW * (1 - 1e-8),), F32_MAX, True),
    ((F32_OVERFLOW * (1 + 1e-8),), F32_MAX, True),
    ((1e38, 1e38), INF, False),  # far below the threshold: the finite value is required
    ((1e38, 1e38), 1e38, True),
    ((-1.7e308, -1.7e308), -INF, True),  # the same at the negative end
    ((-1.7e308, -1.7e308), -F32_MAX, False),
    ((-1e37,), -INF, False),
]


@pytest.mark.parametrize("row, got, accepted", OVERFLOW_CASES,
                         ids=[f"{row[0]:.9g} got {got:.9g}" for row, got, _ in OVERFLOW_CASES])
def test_overflow_in_the_output_dtype(row, got, accepted):
    x = _f64(*row)
    comparison = compare(x, torch.tensor([got], dtype=F64).float())
    assert comparison.ok is accepted, _explain_worst(comparison)


def test_float64_computation_cast_to_float32_is_inside_near_float64_max():
    x = torch.tensor([[1.7e308, 1.6e308], [F32_OVERFLOW, 0.0], [F32_MAX, F32_MAX], [-1.79e308, -1e308]], dtype=F64)
    comparison = compare(x, torch.logsumexp(x, dim=1).float())
    assert comparison.ok, _explain_worst(comparison)
    assert comparison.got.tolist() == [INF, INF, F32_MAX, -INF]
    # float32's max + log 2: within b of the threshold, so a kernel that overflows is right too
    assert comparison.high.tolist()[2] == INF and compare(x[2:3], torch.tensor([INF])).ok


# --------------------------------------------------------------------------------------------
# The interval's edges, and bugs: all outside


def _seeded(rows, cols, dtype, seed=0, scale=1.0, offset=0.0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, cols, generator=gen, dtype=F64) * scale + offset).to(dtype)


PAIRS = [(F16, F16), (BF16, BF16), (F32, F32), (F64, F64), (F64, F32), (F16, F32), (BF16, F32)]


@pytest.mark.parametrize("in_dtype, out_dtype", PAIRS, ids=lambda d: _name(d))
@pytest.mark.parametrize("cols, scale, offset", [(100, 3.0, 0.0), (7, 1.0, -2.0)], ids=["scaled", "near -log N"])
def test_interval_edges_are_in_and_the_next_values_out(in_dtype, out_dtype, cols, scale, offset):
    x = _seeded(16, cols, in_dtype, seed=5, scale=scale, offset=offset)
    y = lse_reference(x)
    low, high = acceptance_interval(y, pre_rounding_bound(x, y, out_dtype=out_dtype), out_dtype=out_dtype)
    assert torch.equal(round_to_dtype(low, out_dtype), low) and torch.equal(round_to_dtype(high, out_dtype), high)
    nearest = round_to_dtype(y, out_dtype)  # y itself may lie outside when b is under half an ulp
    assert (low <= nearest).all() and (nearest <= high).all()
    low_d, high_d = low.to(out_dtype), high.to(out_dtype)  # exact: the ends are values of the dtype
    inf = torch.full_like(low_d, INF)
    assert compare(x, low_d).ok and compare(x, high_d).ok
    assert compare(x, torch.nextafter(high_d, inf)).mismatches == len(y)
    assert compare(x, torch.nextafter(low_d, -inf)).mismatches == len(y)


@pytest.mark.parametrize("out_dtype", DTYPES, ids=_name)
def test_an_error_of_one_and_a_half_allowances_is_caught(out_dtype):
    x = _seeded(64, 1000, out_dtype, seed=7)
    y = lse_reference(x)
    bound = pre_rounding_bound(x, y, out_dtype=out_dtype)
    allowance = allowed_error(x, y, out_dtype=out_dtype)
    # Where b exceeds 1.5 ulps (true of these rows in every dtype), y + 1.5 allowances rounds past
    # round(y + b) even when it crosses into a binade of twice the spacing.
    assert (bound > 1.5 * ulp(y.abs() + bound, out_dtype)).all()
    for sign in (1.0, -1.0):
        assert compare(x, round_to_dtype(y + sign * 0.5 * bound, out_dtype).to(out_dtype)).ok
        assert compare(x, round_to_dtype(y + sign * 1.5 * allowance, out_dtype).to(out_dtype)).mismatches == 64


def _no_max_added(x):
    v = x.float()
    return torch.log(torch.exp(v - v.amax(dim=1, keepdim=True)).sum(dim=1)).to(x.dtype)


def _masked_lanes_counted(x, tile=32):
    """Masked lanes of the last tile load 0.0: each adds exp(0 - m) to the sum."""
    v = x.float()
    m = v.amax(dim=1)
    masked = (-v.shape[1]) % tile
    total = torch.exp(v - m[:, None]).sum(dim=1) + masked * torch.exp(-m)
    return (m + torch.log(total)).to(x.dtype)


def _log_per_lane(x):
    v = x.float()
    m = v.amax(dim=1)
    return (m + (v - m[:, None]).sum(dim=1)).to(x.dtype)


def _sum_in_output_dtype(x):
    """A single running sum kept in x's 16-bit dtype: it stops growing once its ulp dwarfs the terms."""
    v = x.float()
    m = v.amax(dim=1)
    terms = torch.exp(v - m[:, None])
    total = torch.zeros(v.shape[0], dtype=x.dtype)
    for col in range(v.shape[1]):
        total = (total.float() + terms[:, col]).to(x.dtype)
    return (m + torch.log(total.float())).to(x.dtype)


BUGS = [_no_max_added, _masked_lanes_counted, _log_per_lane]


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
@pytest.mark.parametrize("bug", BUGS, ids=lambda f: f.__name__.strip("_"))
def test_bugs_are_outside(bug, dtype):
    x = _seeded(32, 100, dtype, seed=8)  # 100 columns: 28 masked lanes in a 32-wide tile
    comparison = compare(x, bug(x))
    assert comparison.mismatches == 32, _explain_worst(comparison)


@pytest.mark.parametrize("dtype", NARROW, ids=_name)
def test_a_sum_accumulated_in_a_16_bit_dtype_is_caught_on_long_rows(dtype):
    x = _seeded(16, 4096, dtype, seed=9)
    comparison = compare(x, _sum_in_output_dtype(x))
    assert comparison.mismatches == 16, _explain_worst(comparison)
    assert compare(x, _rounds_max_and_log_sum(x)).ok  # the same output dtype, summed in float32


NON_FINITE_CASES = [
    # (row, got, accepted?)
    ((-INF, -INF), -INF, True),
    ((-INF, -INF), INF, False),  # sign error
    ((-INF, -INF), -1e4, False),
    ((1.0, INF), INF, True),
    ((1.0, INF), -INF, False),
    ((1.0, INF), NAN, False),
    ((1.0, INF), 1e4, False),
    ((1.0, NAN), NAN, True),
    ((1.0, NAN), 1.0, False),
    ((1.0, 2.0), NAN, False),  # NaN where a number is due
    ((1.0, 2.0), INF, False),
    ((1.0, 2.0), -INF, False),
]


@pytest.mark.parametrize("row, got, accepted", NON_FINITE_CASES, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_non_finite_results_must_match_exactly(row, got, accepted, dtype):
    x = torch.tensor([list(row)], dtype=dtype)
    comparison = compare(x, torch.tensor([got], dtype=dtype))
    assert comparison.ok is accepted
    assert comparison.error.item() == (0.0 if accepted else INF)


# --------------------------------------------------------------------------------------------
# What a person reads: ulps, multiples of the allowance, the interval


def test_comparison_reports_ulps_and_multiples_of_the_allowance():
    x = torch.tensor([[1.0], [1.0]], dtype=F16)  # y = 1 exactly; ulp of float16 at 1 is 2^-10
    got = torch.tensor([1 + 3 * 2.0**-10, 1 - 2.0**-11], dtype=F16)
    comparison = compare(x, got)
    assert comparison.out_dtype == F16
    assert comparison.ulps(0) == 3.0 and comparison.ulps(1) == 0.5
    high, low = comparison.high[0].item(), comparison.low[1].item()
    assert comparison.allowance(0) == high - 1 and comparison.allowance(1) == 1 - low
    assert comparison.ratio(0) == 3 * 2.0**-10 / (high - 1)
    assert comparison.mismatch.tolist() == [comparison.ratio(0) > 1, comparison.ratio(1) > 1]
    assert comparison.mismatch[0] and not comparison.mismatch[1]
    assert "3 ulps of float16" in comparison.explain(0)
    assert f"accepted [{low!r}" in comparison.explain(1)
    assert comparison.ulps().shape == (2,) and comparison.ratio().shape == (2,)


def test_an_error_from_an_expected_zero_reads_in_the_returned_values_ulps():
    # y = 0 for a single 0.0; ulps at y alone would be subnormal spacings (about 5e44 of them).
    comparison = compare(torch.tensor([[0.0]]), torch.tensor([math.log(2.0)]))
    assert comparison.ulps(0) == pytest.approx(math.log(2.0) / 2.0**-24)  # ulp of float32 in [0.5, 1)
    assert "1.16e+07 ulps of float32" in comparison.explain(0)


def test_accepted_overflow_reads_as_no_error():
    x = _f64(1e39)
    accepted, missed = compare(x, torch.tensor([INF])), compare(x, torch.tensor([F32_MAX]))
    assert accepted.ok and accepted.error.item() == 0 and accepted.ulps(0) == 0 and accepted.ratio(0) == 0
    assert accepted.low.item() == INF and accepted.high.item() == INF
    assert not missed.ok and missed.ratio(0) == INF


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=lse_inputs())
def test_allowance_covers_every_finite_value_of_the_interval(x):
    # allowed_error, Comparison.bound and is_close keep working as one absolute distance.
    for out_dtype in {x.dtype, F32}:
        y = lse_reference(x)
        comparison = compare(x, y.to(out_dtype))
        assert torch.equal(comparison.bound, allowed_error(x, y, out_dtype=out_dtype))
        finite = torch.isfinite(comparison.low) & torch.isfinite(comparison.high)
        for end in (comparison.low, comparison.high):
            assert ((end - y).abs() <= comparison.bound)[finite].all()
            assert is_close(end, y, comparison.bound)[finite].all()
        assert torch.equal(in_interval(comparison.got, comparison.low, comparison.high), ~comparison.mismatch)


def test_the_public_names_are_exported():
    public = ["Comparison", "UNIT_ROUNDOFF", "acceptance_interval", "allowed_error", "compare", "in_interval",
              "is_close", "pre_rounding_bound", "round_to_dtype", "ulp"]
    for name in public:
        assert name in reference.__all__ and getattr(reference, name) is getattr(tolerance, name), name
    assert sorted(reference.__all__) == sorted(set(reference.__all__))


def _truncate_to_bfloat16(values: torch.Tensor) -> torch.Tensor:
    """float32 -> bfloat16 by truncation (round toward zero), as Triton's interpreter converts."""
    bits = values.to(torch.float32).contiguous().view(torch.int32) & ~0xFFFF
    return bits.view(torch.float32).to(torch.bfloat16)  # exact: the low half is zero


def test_a_final_rounding_toward_zero_is_accepted_and_one_ulp_more_is_not():
    torch.manual_seed(3)
    x = (torch.randn(256, 37) * 4 + 10).to(torch.bfloat16)
    exact = lse_reference(x)
    truncated = _truncate_to_bfloat16(exact)
    assert (truncated.double() != exact.to(torch.bfloat16).double()).any()  # it does differ from nearest
    assert compare(x, truncated).ok
    one_more = torch.nextafter(truncated, torch.full_like(truncated, -math.inf))  # truncated again, a step lower
    assert not compare(x, one_more).ok


def test_the_allowance_stays_finite_next_to_float64s_largest_value():
    # |y| + b rounds to inf there; an infinite allowance would accept any finite answer.
    big = torch.finfo(torch.float64).max
    x = torch.tensor([[big, big], [1e300, 1.0]], dtype=torch.float64)
    allowance = allowed_error(x, torch.tensor([big, 1e300], dtype=torch.float64), out_dtype=torch.float64)
    assert bool((allowance < big * 1e-3).all()), allowance
