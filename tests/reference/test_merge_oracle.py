"""The merge oracle: exact mpmath values on random and extreme states, edge semantics, validation messages."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch
from hypothesis import given, settings, strategies as st

from reference import InvalidArgument, combine_reference, merge_state_reference

INF, NAN = math.inf, math.nan
F64 = torch.float64
U64 = 2.0**-53


def _exact(states: list[tuple[float, list[float]]], base) -> tuple[list[float], float, list[float]]:
    """(v, s, v's error scale) of the non-empty states (s_k, v_k) at 80 digits: the formulas as written.

    The scale is sum_k (1 + |t_k|) w_k |v_k|, t_k = s_k - max: a weight computed from t_k in float64
    carries a relative error of a few u (1 + |t_k|), and w_k |t_k| <= 1/e keeps that bounded.
    """
    with mpmath.workdps(80):
        b = mpmath.e if base == "e" else mpmath.mpf(2)
        top = max(mpmath.mpf(s) for s, _ in states)
        terms = [b ** (mpmath.mpf(s) - top) for s, _ in states]
        total = mpmath.fsum(terms)
        lse = top + mpmath.log(total) / mpmath.log(b)
        width = len(states[0][1])
        v = [mpmath.fsum(t * mpmath.mpf(vk[d]) for t, (_, vk) in zip(terms, states)) / total for d in range(width)]
        scale = [mpmath.fsum((1 + abs(mpmath.mpf(s) - top)) * t * abs(mpmath.mpf(vk[d]))
                             for t, (s, vk) in zip(terms, states)) / total for d in range(width)]
        return [float(x) for x in v], float(lse), [float(x) for x in scale]


def _assert_exact(got_v, got_s, states, base) -> None:
    """Within a few float64 ulps of the exact merge (of the non-empty states among ``states``)."""
    present = [(s, v) for s, v in states if s != -INF]
    v, s, scale = _exact(present, base)
    assert abs(got_s - s) <= 8 * U64 * (abs(s) + 1), (states, got_s, s)
    # A weight below float64's range (t_k < -745) underflows: 2^-1074 |v_k| absolute, at most; and a
    # product or sum that lands among the subnormals rounds by up to 2^-1075 each, whatever v is
    # (2^-1075 itself is not a float64: one 2^-1074 per state, and one more).
    underflow = [2.0**-1072 * sum(abs(vk[d]) for _, vk in present) + (len(present) + 1) * 2.0**-1074
                 for d in range(len(got_v))]
    for got, want, size, floor in zip(got_v, v, scale, underflow):
        assert abs(got - want) <= 16 * U64 * size + floor, (states, got_v, v)


def _merge(s_a, v_a, s_b, v_b, base="e", dtype=F64):
    got_v, got_s = merge_state_reference(torch.tensor([[v_a]], dtype=dtype), torch.tensor([[s_a]], dtype=dtype),
                                         torch.tensor([[v_b]], dtype=dtype), torch.tensor([[s_b]], dtype=dtype),
                                         base=base)
    assert got_v.dtype == F64 and got_s.dtype == F64 and got_v.shape == (1, 1, len(v_a))
    return got_v[0, 0].tolist(), float(got_s[0, 0])


EXTREME = {
    # (s_a, s_b): values chosen where the textbook forms break
    "equal": (3.5, 3.5),
    "far apart: 150": (0.0, -150.0),  # log(1 + e^-150) = 7e-66: log1p keeps it, log(1 + x) gives 0
    "far apart: 1000": (2.0, -998.0),  # the small weight underflows float64
    "very far apart: 1e4": (-5e3, 5e3),
    "huge tie 1e30": (1e30, 1e30),  # exp(s_x - s) with s rounded gives w = 1 for both
    "huge opposite": (1e30, -1e30),
    "huge, one float32 ulp apart": (1e30, float(torch.tensor(1e30).nextafter(torch.tensor(0.0)))),
    "huge negative tie": (-1e30, -1e30),
    "large, close": (1e4, 1e4 - 0.5),
    "near zero": (-0.6931471805599453, -0.6931471805599453),  # s = 0: no relative error to hide in
    "tiny": (1e-300, -1e-300),
}


@pytest.mark.parametrize("base", ["e", 2])
@pytest.mark.parametrize("s_a, s_b", list(EXTREME.values()), ids=list(EXTREME))
def test_extreme_merges_match_mpmath(s_a, s_b, base):
    v_a, v_b = [1.0, -2.0, 1e30], [3.0, 0.5, -1e30]
    for first, second in (((s_a, v_a), (s_b, v_b)), ((s_b, v_b), (s_a, v_a))):
        got_v, got_s = _merge(*first, *second, base=base)
        _assert_exact(got_v, got_s, [first, second], base)


def test_a_huge_tie_gives_the_mean_and_s_plus_log_2():
    got_v, got_s = _merge(1e30, [2.0, -4.0], 1e30, [4.0, 8.0])
    assert got_v == [3.0, 2.0] and got_s == 1e30  # 1e30 + log 2 rounds to 1e30 in float64
    got_v, got_s = _merge(3.0, [2.0], 3.0, [4.0], base=2)
    assert got_v == [3.0] and got_s == 4.0  # log2(2^3 + 2^3) = 4 exactly


def test_log1p_keeps_a_far_state_in_s():
    _, got_s = _merge(0.0, [1.0], -150.0, [1.0])
    assert got_s == pytest.approx(math.exp(-150.0), rel=1e-14) and got_s > 0.0


lses = st.one_of(
    st.floats(-50, 50), st.floats(-1e4, 1e4), st.floats(-1e30, 1e30),
    st.sampled_from([0.0, -745.0, 709.0, 1e30, -1e30, -INF]),
)
values = st.one_of(st.floats(-1e3, 1e3), st.floats(-1e30, 1e30), st.sampled_from([0.0, 1e-300]))


@settings(max_examples=150, deadline=None)
@given(states=st.lists(st.tuples(lses, st.lists(values, min_size=3, max_size=3)), min_size=1, max_size=6),
       base=st.sampled_from(["e", 2]), as_float32=st.booleans())
def test_combine_matches_mpmath(states, base, as_float32):
    dtype = torch.float32 if as_float32 else F64
    # The kernels' contract is float32: the values a float32 tensor holds are what is merged.
    states = [(float(torch.tensor(s, dtype=dtype)), torch.tensor(v, dtype=dtype).tolist()) for s, v in states]
    s = torch.tensor([[[st_]] for st_, _ in states], dtype=dtype)
    v = torch.tensor([[[vk]] for _, vk in states], dtype=dtype)
    got_v, got_s = combine_reference(v, s, base=base)
    if all(st_ == -INF for st_, _ in states):
        assert got_s.item() == -INF and got_v.flatten().tolist() == [0.0, 0.0, 0.0]
    else:
        _assert_exact(got_v.flatten().tolist(), got_s.item(), states, base)
    if len(states) == 2:  # a merge is a combine of two
        merged = merge_state_reference(v[0], s[0], v[1], s[1], base=base)
        assert torch.equal(merged[0], got_v) and torch.equal(merged[1], got_s)


def test_64_splits_match_mpmath():
    gen = torch.Generator().manual_seed(1)
    s = torch.randn(64, 1, 1, generator=gen, dtype=F64) * 20
    s[::5] = -INF
    v = torch.randn(64, 1, 1, 4, generator=gen, dtype=F64)
    got_v, got_s = combine_reference(v, s)
    states = [(float(s[k, 0, 0]), v[k, 0, 0].tolist()) for k in range(64)]
    _assert_exact(got_v.flatten().tolist(), got_s.item(), states, "e")


# --------------------------------------------------------------------------------------------
# Edge semantics


def test_two_empty_states_give_zero_and_minus_inf_whatever_v_holds():
    got_v, got_s = _merge(-INF, [NAN, INF, 1.0], -INF, [-INF, NAN, 2.0])
    assert got_v == [0.0, 0.0, 0.0] and got_s == -INF


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, F64])
def test_one_empty_state_is_the_identity(dtype):
    gen = torch.Generator().manual_seed(2)
    v = torch.randn(3, 2, 5, generator=gen).to(dtype)
    s = (torch.randn(3, 2, generator=gen) * 100).float()
    garbage = torch.full_like(v, NAN)
    garbage[0, 0, 0] = INF
    empty = torch.full_like(s, -INF)
    for args in ((v, s, garbage, empty), (garbage, empty, v, s)):
        got_v, got_s = merge_state_reference(*args)
        assert torch.equal(got_v, v.double()) and torch.equal(got_s, s.double())


def test_nan_in_any_s_makes_that_rows_s_and_v_nan():
    v_a, v_b = torch.ones(4, 1, 3), torch.ones(4, 1, 3)
    v_a[1, 0, 0] = INF  # beside an empty state, a NaN state's inf is still NaN
    s_a = torch.tensor([[NAN], [NAN], [0.0], [1.0]])
    s_b = torch.tensor([[0.0], [-INF], [NAN], [2.0]])
    got_v, got_s = merge_state_reference(v_a, s_a, v_b, s_b)
    assert torch.isnan(got_s[:3]).all() and torch.isnan(got_v[:3]).all()
    assert torch.isfinite(got_s[3]).all() and torch.isfinite(got_v[3]).all()
    both = merge_state_reference(v_a[:1], torch.tensor([[NAN]]), v_b[:1], torch.tensor([[NAN]]))
    assert torch.isnan(both[0]).all() and torch.isnan(both[1]).all()


def test_an_infinite_value_of_a_non_empty_state_carries_through():
    # The weight of the state at -2000 underflows float64 to 0; it is still positive: inf stays inf.
    got_v, _ = _merge(0.0, [1.0, INF, 1.0], -2000.0, [INF, 1.0, NAN])
    assert got_v[0] == INF and got_v[1] == INF and math.isnan(got_v[2])
    got_v, _ = _merge(0.0, [INF], 0.0, [-INF])
    assert math.isnan(got_v[0])  # inf + -inf, as IEEE adds them


def test_combine_edges():
    v = torch.randn(3, 2, 1, 4, dtype=F64)
    s = torch.tensor([[[1.0], [-INF]], [[-INF], [-INF]], [[2.0], [-INF]]], dtype=F64)
    got_v, got_s = combine_reference(v, s)
    assert got_s[1, 0] == -INF and torch.equal(got_v[1, 0], torch.zeros(4, dtype=F64))  # all splits empty
    assert got_s[0, 0] == pytest.approx(2.0 + math.log1p(math.exp(-1.0)), rel=1e-15)
    one_v, one_s = combine_reference(v[:1], s[:1])  # S = 1: the state itself
    assert torch.equal(one_s, s[0]) and torch.equal(one_v[0], v[0, 0])
    none_v, none_s = combine_reference(torch.empty(0, 2, 1, 4), torch.empty(0, 2, 1))
    assert (none_s == -INF).all() and (none_v == 0).all() and none_v.shape == (2, 1, 4)
    nan_s = s.clone()
    nan_s[1, 0, 0] = NAN
    got_v, got_s = combine_reference(v, nan_s)
    assert torch.isnan(got_s[0, 0]) and torch.isnan(got_v[0, 0]).all() and not torch.isnan(got_v[1]).any()


def test_empty_shapes():
    got_v, got_s = merge_state_reference(torch.empty(0, 3, 4), torch.empty(0, 3), torch.empty(0, 3, 4),
                                         torch.empty(0, 3))
    assert got_v.shape == (0, 3, 4) and got_s.shape == (0, 3)
    got_v, got_s = merge_state_reference(torch.empty(2, 1, 0), torch.zeros(2, 1), torch.empty(2, 1, 0),
                                         torch.zeros(2, 1))
    assert got_v.shape == (2, 1, 0) and got_s.tolist() == [[math.log(2.0)]] * 2


def test_positive_infinity_is_outside_the_contract():
    s_a = torch.zeros(2, 3)
    s_a[1, 2] = INF
    with pytest.raises(InvalidArgument) as info:
        merge_state_reference(torch.zeros(2, 3, 4), torch.zeros(2, 3), torch.zeros(2, 3, 4), s_a)
    assert "s_b[1, 2]=inf; an LSE of +inf" in str(info.value) and "outside the merge contract" in str(info.value)
    with pytest.raises(InvalidArgument, match=r"s\[1, 1, 2\]=inf"):
        combine_reference(torch.zeros(2, 2, 3, 4), torch.stack([torch.zeros(2, 3), s_a]))


# --------------------------------------------------------------------------------------------
# Validation: which argument, what is wrong, how to fix it

V, S = torch.zeros(2, 3, 4), torch.zeros(2, 3)
BAD_MERGES = {
    "v_a list": (([1.0], S, V, S), {}, "v_a=list object; expected a 3-D (T, H, D) torch.Tensor"),
    "v_a 2-D": ((S, S, V, S), {}, "v_a.shape=(2, 3); expected a 3-D (T, H, D) tensor"),
    "s_a 3-D": ((V, V, V, S), {}, "s_a.shape=(2, 3, 4); expected a 2-D (T, H) tensor"),
    "v_b other D": ((V, S, torch.zeros(2, 3, 5), S), {}, "v_b.shape=(2, 3, 5) does not match v_a.shape=(2, 3, 4)"),
    "v_b other T": ((V, S, torch.zeros(1, 3, 4), S), {}, "v_b.shape=(1, 3, 4) does not match"),
    "s_b other H": ((V, S, V, torch.zeros(2, 2)), {}, "s_b.shape=(2, 2); expected (2, 3), the leading dims of v_a"),
    "s_a transposed shape": ((V, S.t(), V, S), {}, "s_a.shape=(3, 2); expected (2, 3)"),
    "v int": ((V.int(), S, V.int(), S), {}, "v_a.dtype=torch.int32; supported dtypes are float16, bfloat16, float32"),
    "s bool": ((V, S.bool(), V, S), {}, "s_a.dtype=torch.bool; supported dtypes are"),
    "v dtypes differ": ((V, S, V.half(), S), {}, "v_b.dtype=torch.float16 differs from v_a.dtype=torch.float32"),
    "base 10": ((V, S, V, S), {"base": 10}, "base=10; expected \"e\" for natural-log LSEs"),
    "base '2'": ((V, S, V, S), {"base": "2"}, "base='2'; expected"),
    "base True": ((V, S, V, S), {"base": True}, "base=True; expected"),
}


@pytest.mark.parametrize("args, options, message", list(BAD_MERGES.values()), ids=list(BAD_MERGES))
def test_bad_merge_input_is_named_in_the_message(args, options, message):
    with pytest.raises(InvalidArgument) as info:
        merge_state_reference(*args, **options)
    assert message in str(info.value)


BAD_COMBINES = {
    "v 3-D": ((V, S), "v.shape=(2, 3, 4); expected a 4-D (S, T, H, D) tensor"),
    "s 2-D": ((V[None], S), "s.shape=(2, 3); expected a 3-D (S, T, H) tensor"),
    "s other S": ((V[None], torch.zeros(2, 2, 3)), "s.shape=(2, 2, 3); expected (1, 2, 3), the leading dims of v"),
    "v int": ((V[None].long(), S[None]), "v.dtype=torch.int64; supported dtypes"),
}


@pytest.mark.parametrize("args, message", list(BAD_COMBINES.values()), ids=list(BAD_COMBINES))
def test_bad_combine_input_is_named_in_the_message(args, message):
    with pytest.raises(InvalidArgument) as info:
        combine_reference(*args)
    assert message in str(info.value)


def test_base_two_point_zero_is_base_two():
    assert _merge(3.0, [1.0], 3.0, [1.0], base=2.0) == _merge(3.0, [1.0], 3.0, [1.0], base=2)
