"""The float64 oracle: edge semantics (torch.logsumexp's), accuracy against exact mpmath sums."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch
from hypothesis import given, settings, strategies as st

from reference import InvalidArgument, lse_reference

INF, NAN = math.inf, math.nan

EDGE_CASES = {
    "all -inf": ([-INF, -INF, -INF], -INF),
    "single -inf": ([-INF], -INF),
    "+inf": ([1.0, INF, 2.0], INF),
    "+inf with -inf": ([-INF, INF], INF),
    "two +inf": ([INF, INF], INF),
    "NaN": ([1.0, NAN, 2.0], NAN),
    "NaN with +inf": ([NAN, INF], NAN),
    "NaN with -inf": ([-INF, NAN], NAN),
    "partly -inf": ([-INF, 0.0, -INF], 0.0),
    "single finite": ([3.5], 3.5),
    "constant": ([2.0, 2.0], 2.0 + math.log(2.0)),
}


@pytest.mark.parametrize("row, expected", list(EDGE_CASES.values()), ids=list(EDGE_CASES))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_edge_semantics_match_torch_logsumexp(row, expected, dtype):
    x = torch.tensor([row], dtype=dtype)
    got = lse_reference(x)
    assert got.dtype == torch.float64 and got.shape == (1,)
    torch.testing.assert_close(got, torch.logsumexp(x.double(), dim=1), equal_nan=True)
    if math.isnan(expected):
        assert math.isnan(float(got[0]))
    else:
        assert float(got[0]) == pytest.approx(expected, rel=1e-15)


def test_empty_shapes():
    assert lse_reference(torch.empty(0, 5)).shape == (0,)
    assert lse_reference(torch.empty(3, 0)).tolist() == [-INF] * 3
    assert lse_reference(torch.empty(0, 0)).shape == (0,)


def test_dominant_element_keeps_the_tiny_remainder():
    # log(1 + e^-40) = 4.248e-18: log(1 + s) in float64 returns exactly 0 here, log1p does not.
    got = float(lse_reference(torch.tensor([[0.0, -40.0]], dtype=torch.float64))[0])
    assert got == pytest.approx(math.log1p(math.exp(-40.0)), rel=1e-14)
    assert got > 0.0


def test_strided_input_uses_its_own_values():
    base = torch.randn(6, 10, dtype=torch.float64)
    view = base.t()[2:5, ::2]  # column-major, column step, storage offset
    torch.testing.assert_close(lse_reference(view), torch.logsumexp(view, dim=1))


def _exact(row: list[float]) -> float:
    with mpmath.workdps(60):
        return float(mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(v)) for v in row)))


finite_rows = st.lists(
    st.one_of(
        st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
        st.floats(-50, 50, allow_nan=False, allow_infinity=False),
        st.sampled_from([0.0, -745.0, 709.0, 1e-300, -1e-300]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(finite_rows, min_size=1, max_size=4))
def test_matches_exact_mpmath_sum(rows):
    width = max(len(r) for r in rows)
    padded = [r + [-INF] * (width - len(r)) for r in rows]
    got = lse_reference(torch.tensor(padded, dtype=torch.float64))
    for value, row in zip(got.tolist(), rows):
        exact = _exact(row)
        # float64 throughout: a few ulps of the result, or of the terms' exponent range near 0.
        assert abs(value - exact) <= 8 * 2.0**-53 * (abs(exact) + max(abs(v) for v in row) + 1), (row, value, exact)


@pytest.mark.parametrize(
    "bad, message",
    [
        ([1.0, 2.0], "x=list object; expected a 2-D torch.Tensor"),
        (torch.zeros(3), "x.shape=(3,); expected a 2-D (M, N) tensor"),
        (torch.zeros(2, 2, 2), "x.shape=(2, 2, 2)"),
        (torch.zeros(2, 2, dtype=torch.int32), "x.dtype=torch.int32; supported dtypes are"),
    ],
    ids=["list", "1-D", "3-D", "int32"],
)
def test_bad_input_is_named_in_the_message(bad, message):
    with pytest.raises(InvalidArgument) as info:
        lse_reference(bad)
    assert message in str(info.value)
