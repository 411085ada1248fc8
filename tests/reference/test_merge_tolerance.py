"""The merge tolerance model: correct float32 merges are inside it, the canonical broken merges are not.

Four parts: the comparison's rules (non-finite values exactly, an overflow, the worst element
reported), the allowances' size (a hand-computed case, growth with |s|, the bound at any |s|),
correct implementations written several ways (inside, also under Hypothesis), and broken ones
(outside, where they are wrong and only there).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import reference
from reference import (
    InvalidArgument,
    MergeComparison,
    check_combine,
    check_merge,
    combine_allowance,
    compare_merge,
    merge_allowance,
    merge_state_reference,
)

INF, NAN = math.inf, math.nan
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
V_DTYPES = [F32, F16, BF16]
LOG2E = 1.4426950408889634
U32 = 2.0**-24


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _exp(x, base):
    return torch.exp2(x) if base == 2 else torch.exp(x)


def _weighted(v, w, s):
    """w * v in float32, 0 for an empty state whatever its v holds."""
    return torch.where((s == -INF)[..., None], torch.zeros(()), w[..., None] * v.float())


# --------------------------------------------------------------------------------------------
# Correct merges, each in float32, written the ways real kernels write them


def _plain_formulas(v_a, s_a, v_b, s_b, base="e"):
    """The definition as written: s = logaddexp(s_a, s_b), w_x = exp(s_x - s) (FlashAttention's combine)."""
    a, b = s_a.float(), s_b.float()
    s = torch.logaddexp2(a, b) if base == 2 else torch.logaddexp(a, b)
    # Two empty states: s = -inf, and exp(-inf - -inf) would be NaN; shift by 0 there instead.
    safe = torch.where(s == -INF, torch.zeros_like(s), s)
    v = _weighted(v_a, _exp(a - safe, base), a) + _weighted(v_b, _exp(b - safe, base), b)
    return v.to(v_a.dtype), s


def _max_relative(v_a, s_a, v_b, s_b, base="e", *, scale_first=True):
    """vLLM's and FlashInfer's form: weights against the max, renormalized. With ``scale_first`` a
    natural-log s is scaled by log2(e) before the subtraction (the form whose error grows with |s|)."""
    a, b = s_a.float(), s_b.float()
    top = torch.maximum(a, b)
    both = top == -INF
    shift = torch.where(both, torch.zeros_like(top), top)
    if base == 2:
        e_a, e_b = torch.exp2(a - shift), torch.exp2(b - shift)
    elif scale_first:
        e_a, e_b = torch.exp2(a * LOG2E - shift * LOG2E), torch.exp2(b * LOG2E - shift * LOG2E)
    else:
        e_a, e_b = torch.exp(a - shift), torch.exp(b - shift)
    total = torch.where(both, torch.ones_like(top), e_a + e_b)
    log_total = torch.log2(total) if base == 2 else torch.log(total)
    s = torch.where(both, torch.full_like(top, -INF), shift + log_total)
    v = _weighted(v_a, e_a / total, a) + _weighted(v_b, e_b / total, b)
    return v.to(v_a.dtype), s


def _subtract_first(v_a, s_a, v_b, s_b, base="e"):
    return _max_relative(v_a, s_a, v_b, s_b, base, scale_first=False)


CORRECT = [_plain_formulas, _max_relative, _subtract_first]


@st.composite
def merge_inputs(draw):
    """Small states with the edges the contract has: empty and NaN states, far and near LSEs, huge ones."""
    tokens, heads = draw(st.integers(0, 4)), draw(st.integers(1, 3))
    head_dim = draw(st.sampled_from([1, 3, 8]))
    dtype = draw(st.sampled_from(V_DTYPES))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**20)))
    scale = draw(st.sampled_from([0.1, 3.0, 100.0, 1e4]))
    offset = draw(st.sampled_from([0.0, -1e4, 1e4, 1e30, -1e30]))
    gap = draw(st.sampled_from([0.0, 1.0, 30.0, 200.0]))
    s_a = torch.randn(tokens, heads, generator=gen, dtype=F64) * scale + offset
    s_b = (s_a + torch.randn(tokens, heads, generator=gen, dtype=F64) * gap) if gap else s_a.clone()
    size = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    v_a = torch.randn(tokens, heads, head_dim, generator=gen, dtype=F64) * size
    cancel = draw(st.booleans())
    v_b = -v_a * 1.01 if cancel else torch.randn(tokens, heads, head_dim, generator=gen, dtype=F64) * size
    s_a, s_b = s_a.float(), s_b.float()
    v_a, v_b = v_a.to(dtype), v_b.to(dtype)
    for row in range(tokens * heads):
        t, h = divmod(row, heads)
        kind = draw(st.sampled_from(["plain", "plain", "a empty", "b empty", "both empty", "a nan", "b nan"]))
        if kind in ("a empty", "both empty"):
            s_a[t, h], v_a[t, h] = -INF, NAN  # an empty state's v is garbage: it must be ignored
        if kind in ("b empty", "both empty"):
            s_b[t, h], v_b[t, h] = -INF, NAN
        if kind == "a nan":
            s_a[t, h] = NAN
        if kind == "b nan":
            s_b[t, h] = NAN
    return v_a, s_a, v_b, s_b, draw(st.sampled_from(["e", 2]))


@pytest.mark.parametrize("impl", CORRECT, ids=lambda f: f.__name__.strip("_"))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=merge_inputs())
def test_correct_float32_merges_are_always_accepted(impl, inputs):
    *states, base = inputs
    got_v, got_s = impl(*states, base)
    comparison = check_merge(*states, got_v, got_s, base=base)
    assert comparison.ok, comparison.explain()


def _seeded(tokens=6, heads=4, head_dim=8, dtype=F32, *, seed=0, apart=False, positive=False):
    """States whose LSEs lie within 2 of each other (both weights matter), v of unit size.

    ``apart``: s_b lies 1 to 2 below s_a (the weights differ by at least 0.46) and v_a > 0 > v_b, so a
    wrong weight moves v by at least a tenth; ``positive``: v > 1 everywhere (no cancellation).
    """
    gen = torch.Generator().manual_seed(seed)
    s_a = torch.randn(tokens, heads, generator=gen) * 3
    if apart:
        s_b = s_a - 1 - torch.rand(tokens, heads, generator=gen)
    else:
        s_b = s_a + (torch.rand(tokens, heads, generator=gen) * 2 - 1) * 2
    v_a, v_b = (torch.randn(tokens, heads, head_dim, generator=gen) for _ in range(2))
    if positive or apart:
        v_a, v_b = v_a.abs() + 1, v_b.abs() + 1
    if apart:
        v_b = -v_b
    return v_a.to(dtype), s_a, v_b.to(dtype), s_b


def _combine_direct(v, s, base="e"):
    """FlashAttention's split-KV combine in float32: the LSE of the splits, then w_k = exp(s_k - lse)."""
    s = s.float()
    top = s.amax(dim=0)
    shift = torch.where(top == -INF, torch.zeros_like(top), top)
    total = _exp(s - shift, base).sum(dim=0)
    lse = shift + (torch.log2(total) if base == 2 else torch.log(total))
    safe = torch.where(lse == -INF, torch.zeros_like(lse), lse)
    out = sum(_weighted(v[k], _exp(s[k] - safe, base), s[k]) for k in range(s.shape[0]))
    return out.to(v.dtype), lse


def _combine_sequential(v, s, base="e"):
    """FlashInfer's merge_states: pairwise merges into a running state, each rounded to float32."""
    run_v, run_s = torch.zeros_like(v[0], dtype=F32), torch.full_like(s[0], -INF, dtype=F32)  # the empty state
    for k in range(s.shape[0]):
        run_v, run_s = _max_relative(run_v, run_s, v[k].float(), s[k].float(), base)
    return run_v.to(v.dtype), run_s


@pytest.mark.parametrize("impl", [_combine_direct, _combine_sequential], ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("splits", [1, 2, 7, 64])
@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_correct_float32_combines_are_accepted(impl, splits, dtype):
    gen = torch.Generator().manual_seed(splits)
    s = torch.randn(splits, 5, 3, generator=gen) * 10
    s[::3, 0] = -INF  # some splits empty, and all of them for (t, h) = (0, *) when S <= 3
    v = torch.randn(splits, 5, 3, 4, generator=gen).to(dtype)
    for base in ("e", 2):
        comparison = check_combine(v, s, *impl(v, s, base), base=base)
        assert comparison.ok, comparison.explain()


# --------------------------------------------------------------------------------------------
# Broken merges: rejected where they are wrong


def _exp2_on_natural_log(v_a, s_a, v_b, s_b):
    """A base-2 kernel (FlashInfer's) fed natural-log LSEs: 2^t where e^t is due, log2 for log."""
    return _max_relative(v_a, s_a, v_b, s_b, base=2)


def _not_renormalized(v_a, s_a, v_b, s_b):
    """w_x = exp(s_x - max) alone: the max's weight is 1 and the weights sum to more than 1."""
    top = torch.maximum(s_a, s_b)
    v = _weighted(v_a, torch.exp(s_a - top), s_a) + _weighted(v_b, torch.exp(s_b - top), s_b)
    return v.to(v_a.dtype), torch.logaddexp(s_a, s_b)


def _finite_sentinel(v_a, s_a, v_b, s_b):
    """Empty states marked with -1e30 instead of -inf: two of them merge to a finite s."""
    sentinel = torch.tensor(-1e30)
    return _max_relative(v_a, torch.where(s_a == -INF, sentinel, s_a), v_b, torch.where(s_b == -INF, sentinel, s_b))


def _swapped(v_a, s_a, v_b, s_b, base):
    """Each state's weight on the other state's v."""
    return _max_relative(v_b, s_a, v_a, s_b, base)


@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_exp2_on_natural_log_lses_is_rejected(dtype):
    states = _seeded(dtype=dtype, seed=1, apart=True)
    comparison = check_merge(*states, *_exp2_on_natural_log(*states))
    # Every s is off (m + log2(1 + 2^d) for m + log(1 + e^d): 0.16 at d = -1), and the small weight
    # by 12% to 24% (2^d / (1 + 2^d) for e^d / (1 + e^d), d in [-2, -1]).
    assert not comparison.ok_s.any() and not comparison.ok_v.any(), comparison.explain()


@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_weights_not_renormalized_are_rejected(dtype):
    states = _seeded(dtype=dtype, seed=2, positive=True)
    comparison = check_merge(*states, *_not_renormalized(*states))
    # v is (1 + e^-|d|) times too large (at least 13% for |d| <= 2) everywhere; s is right.
    assert comparison.ok_s.all() and not comparison.ok_v.any(), comparison.explain()


@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_a_finite_sentinel_for_empty_states_is_rejected_exactly_where_both_are_empty(dtype):
    v_a, s_a, v_b, s_b = _seeded(dtype=dtype, seed=3)
    s_a[0], s_b[0] = -INF, -INF  # both empty: only -inf is right, and v = 0
    s_a[1, :2] = -INF  # one empty: the sentinel gives the identity, which is right
    s_b[2, 1:] = -INF
    comparison = check_merge(v_a, s_a, v_b, s_b, *_finite_sentinel(v_a, s_a, v_b, s_b))
    both_empty = (s_a == -INF) & (s_b == -INF)
    assert torch.equal(comparison.ok_s, ~both_empty), comparison.explain()
    assert comparison.worst.output == "s" and comparison.worst.expected == -INF
    assert comparison.worst.got == pytest.approx(-1e30) and comparison.worst.ratio == INF
    assert "a non-finite expected value must be matched exactly" in comparison.explain()


@pytest.mark.parametrize("base", ["e", 2])
@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_swapped_states_are_rejected(dtype, base):
    v_a, s_a, v_b, s_b = _seeded(dtype=dtype, seed=4, apart=True)  # the swap moves v by at least 0.9
    comparison = check_merge(v_a, s_a, v_b, s_b, *_swapped(v_a, s_a, v_b, s_b, base), base=base)
    assert comparison.ok_s.all() and not comparison.ok_v.any(), comparison.explain()


def _combine_not_renormalized(v, s):
    top = s.amax(dim=0)
    out = sum(_weighted(v[k], torch.exp(s[k] - top), s[k]) for k in range(s.shape[0]))
    return out.to(v.dtype), torch.logsumexp(s, dim=0)


def test_a_combine_not_renormalized_is_rejected():
    gen = torch.Generator().manual_seed(6)
    s = torch.randn(7, 4, 2, generator=gen)
    v = torch.rand(7, 4, 2, 3, generator=gen) + 1
    comparison = check_combine(v, s, *_combine_not_renormalized(v, s))
    assert comparison.ok_s.all() and not comparison.ok_v.any(), comparison.explain()


# --------------------------------------------------------------------------------------------
# The comparison's rules


def _one(value):
    return torch.tensor([[value]], dtype=F64)


NON_FINITE = [
    # (expected, got, accepted?)
    (-INF, -INF, True),
    (-INF, -1e30, False),  # the finite sentinel
    (-INF, INF, False),
    (-INF, NAN, False),
    (INF, INF, True),
    (INF, -INF, False),
    (NAN, NAN, True),
    (NAN, 0.0, False),
    (NAN, INF, False),
    (1.0, NAN, False),  # NaN where a number is due
    (1.0, INF, False),
    (1.0, -INF, False),
]


@pytest.mark.parametrize("output", ["v", "s"])
@pytest.mark.parametrize("expected, got, accepted", NON_FINITE, ids=repr)
def test_non_finite_values_must_match_exactly(expected, got, accepted, output):
    shapes = {"v": (1, 1, 1), "s": (1, 1)}
    want = {name: torch.zeros(shape, dtype=F64) for name, shape in shapes.items()}
    have = {name: torch.zeros(shape, dtype=F64) for name, shape in shapes.items()}
    room = {name: torch.full(shape, 1e300, dtype=F64) for name, shape in shapes.items()}  # any finite distance
    want[output].fill_(expected)
    have[output].fill_(got)
    comparison = compare_merge(want["v"], want["s"], have["v"], have["s"], room["v"], room["s"])
    assert comparison.ok is accepted, comparison.explain()
    error = getattr(comparison, f"error_{output}").item()
    assert error == (0.0 if accepted else INF)


OVERFLOW = [
    # (v dtype, v_a = v_b, got, accepted?)
    (F16, 65504.0, INF, False),  # the max of float16 itself: a correct kernel rounds to it, not past
    (F16, 65504.0, 65504.0, True),
    (F32, torch.finfo(F32).max, INF, True),  # w_a + w_b may round above 1: max * (1 + u) overflows
    (F32, 1e38, INF, False),
    (F32, -torch.finfo(F32).max, -INF, True),
    (F32, -torch.finfo(F32).max, INF, False),  # the wrong sign
]


@pytest.mark.parametrize("dtype, value, got, accepted", OVERFLOW,
                         ids=[f"{_name(c[0])} {c[1]:g} -> {c[2]:g}" for c in OVERFLOW])
def test_an_overflow_is_accepted_only_where_a_correct_kernel_may_overflow(dtype, value, got, accepted):
    v = torch.full((1, 1, 1), value, dtype=dtype)
    s_a, s_b = torch.tensor([[0.0]]), torch.tensor([[-0.3]])
    comparison = check_merge(v, s_a, v, s_b, torch.full((1, 1, 1), got, dtype=dtype), torch.logaddexp(s_a, s_b))
    assert comparison.ok is accepted, comparison.explain()


def test_the_allowance_is_a_distance_in_both_directions():
    states = _seeded(seed=7)
    expected = merge_state_reference(*states)
    allowance_v, allowance_s = merge_allowance(*states)
    for sign in (1.0, -1.0):
        inside = compare_merge(*expected, expected[0] + sign * 0.99 * allowance_v,
                               expected[1] + sign * 0.99 * allowance_s, allowance_v, allowance_s)
        outside = compare_merge(*expected, expected[0] + sign * 1.01 * allowance_v,
                                expected[1] + sign * 1.01 * allowance_s, allowance_v, allowance_s)
        assert inside.ok and inside.mismatches == 0
        assert outside.mismatches == allowance_v.numel() + allowance_s.numel()


def _toward_zero_bf16(values: torch.Tensor) -> torch.Tensor:
    """float32 -> bfloat16 by truncation, as Triton's interpreter converts."""
    bits = values.float().contiguous().view(torch.int32) & ~0xFFFF
    return bits.view(F32).to(BF16)  # exact: the low half is zero


def test_the_final_rounding_may_be_directed_and_three_steps_more_is_caught():
    v_a, s_a, v_b, s_b = _seeded(dtype=BF16, seed=8, head_dim=64, positive=True)  # no cancellation
    expected_v, _ = merge_state_reference(v_a, s_a, v_b, s_b)
    _, s = _max_relative(v_a, s_a, v_b, s_b)
    truncated = _toward_zero_bf16(expected_v)
    assert not torch.equal(truncated, expected_v.to(BF16))  # it differs from rounding to nearest somewhere
    assert check_merge(v_a, s_a, v_b, s_b, truncated, s).ok
    away = truncated
    for _ in range(3):  # three bfloat16 steps further from the exact value: past b + one ulp anywhere
        away = torch.nextafter(away, torch.where(expected_v > 0, -INF, INF).to(BF16))
    comparison = check_merge(v_a, s_a, v_b, s_b, away, s)
    assert not comparison.ok_v.any(), comparison.explain()


def test_the_worst_element_is_reported_with_expected_got_and_allowance():
    states = _seeded(tokens=3, heads=2, head_dim=4, seed=9)
    expected_v, expected_s = merge_state_reference(*states)
    allowance_v, allowance_s = merge_allowance(*states)
    got_v, got_s = expected_v.clone(), expected_s.clone()
    got_v[2, 1, 3] += 10 * allowance_v[2, 1, 3]
    got_v[0, 0, 0] -= 4 * allowance_v[0, 0, 0]
    got_s[1, 0] += 3 * allowance_s[1, 0]
    comparison = compare_merge(expected_v, expected_s, got_v, got_s, allowance_v, allowance_s)
    assert isinstance(comparison, MergeComparison) and not comparison.ok and comparison.mismatches == 3
    worst = comparison.worst
    assert (worst.output, worst.index) == ("v", (2, 1, 3)) and worst.ratio == pytest.approx(10, rel=1e-6)
    assert worst.expected == expected_v[2, 1, 3].item() and worst.got == got_v[2, 1, 3].item()
    assert worst.allowance == allowance_v[2, 1, 3].item()
    assert comparison.explain().startswith(
        "2 of 24 elements of v and 1 of 6 of s outside the tolerance; worst v[2, 1, 3]: expected ")
    assert "= 10 x the allowance" in comparison.explain()
    assert torch.equal(~comparison.ok_s, torch.tensor([[False, False], [True, False], [False, False]]))
    fine = compare_merge(expected_v, expected_s, expected_v, expected_s, allowance_v, allowance_s)
    assert fine.ok and fine.worst is None and "all 24 elements of v and 6 of s within" in fine.explain()


# --------------------------------------------------------------------------------------------
# The allowances' size


def test_the_allowance_of_s_is_the_derivations_number():
    v, s = torch.ones(1, 1, 1), torch.zeros(1, 1)
    _, allowance_s = merge_allowance(v, s, v, s)
    reach = math.log(2.0)  # A' = A + log S with A = 0, and |s_out| = log 2
    lse_error = U32 * (reach + 6 * reach + 2 + 16)
    bound = 2 * lse_error
    assert allowance_s.item() == pytest.approx(bound + 2.0**-24, rel=1e-12)  # ulp of float32 in [0.5, 1)


def test_the_allowance_grows_with_the_lses_magnitude_and_stays_bounded():
    v = torch.ones(1, 1, 4)
    sizes = []
    for offset in (0.0, 1e2, 1e4, 1e6, 1e30):
        s_a, s_b = torch.tensor([[offset]]), torch.tensor([[offset - 0.5]])
        allowance_v, allowance_s = merge_allowance(v, s_a, v, s_b)
        sizes.append(allowance_v.max().item())
        assert allowance_s.item() >= U32 * abs(offset)
    assert sizes == sorted(sizes) and sizes[0] < 1e-5 and sizes[2] > 1e-3
    # Past |s| ~ 1e6 float32 cannot place the weights: each is off by at most 1, so v by K sum |v_k| + ulps.
    assert sizes[-1] <= 2 * 2 * 1.0 * (1 + 1e-6) + 1e-6


def test_an_empty_states_v_takes_no_part_in_the_allowance():
    v, garbage = torch.ones(1, 1, 2), torch.full((1, 1, 2), 1e30)
    s, empty = torch.zeros(1, 1), torch.full((1, 1), -INF)
    clean, _ = merge_allowance(v, s, v.clone(), empty)
    dirty, _ = merge_allowance(v, s, garbage, empty)
    assert torch.equal(clean, dirty) and clean.max() < 1e-5
    none_v, none_s = merge_allowance(garbage, empty, garbage, empty)
    assert none_v.max() < 1e-37 and none_s.item() == 0.0  # v = 0 is due (to flushes), s = -inf exactly


# --------------------------------------------------------------------------------------------
# Validation and exports


BAD_COMPARISONS = {
    "got_v shape": ({"got_v": torch.zeros(2, 3, 5)},
                    "got_v.shape=(2, 3, 5); expected (2, 3, 4), the shape of expected_v"),
    "got_s list": ({"got_s": [0.0]}, "got_s=list object; expected a torch.Tensor"),
    "allowance_s shape": ({"allowance_s": torch.zeros(3, 2)},
                          "allowance_s.shape=(3, 2); expected (2, 3), the shape of expected_s"),
    "expected_v None": ({"expected_v": None}, "expected_v=NoneType object; expected a torch.Tensor"),
}


@pytest.mark.parametrize("change, message", list(BAD_COMPARISONS.values()), ids=list(BAD_COMPARISONS))
def test_compare_merge_names_a_bad_argument(change, message):
    v, s = torch.zeros(2, 3, 4, dtype=F64), torch.zeros(2, 3, dtype=F64)
    args = {"expected_v": v, "expected_s": s, "got_v": v, "got_s": s, "allowance_v": v, "allowance_s": s}
    with pytest.raises(InvalidArgument) as info:
        compare_merge(**{**args, **change})
    assert message in str(info.value)


def test_allowance_options_are_validated():
    v, s = torch.zeros(1, 1, 1), torch.zeros(1, 1)
    with pytest.raises(InvalidArgument, match="out_dtype=torch.int32 is not a supported floating dtype"):
        merge_allowance(v, s, v, s, out_dtype=torch.int32)
    with pytest.raises(InvalidArgument, match="base='10'"):
        combine_allowance(v[None], s[None], base="10")
    assert merge_allowance(v, s, v, s, out_dtype=F16)[0].item() > merge_allowance(v, s, v, s)[0].item()


def test_the_public_names_are_exported():
    import reference.merge_oracle as oracle
    import reference.merge_tolerance as tolerance

    for name in ["MergeComparison", "MergeMismatch", "check_combine", "check_merge", "combine_allowance",
                 "compare_merge", "merge_allowance"]:
        assert name in reference.__all__ and getattr(reference, name) is getattr(tolerance, name), name
    for name in ["merge_state_reference", "combine_reference"]:
        assert name in reference.__all__ and getattr(reference, name) is getattr(oracle, name), name
