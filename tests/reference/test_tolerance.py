"""The tolerance model: correct kernels written differently stay inside it; real errors do not."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from reference import UNIT_ROUNDOFF, allowed_error, compare, lse_reference


def _lse_float32_exp2(x: torch.Tensor) -> torch.Tensor:
    """A correct float32 LSE in the exp2 form (x*log2(e) - m*log2(e)), sequential over 32 lanes."""
    v = x.float()
    m = v.amax(dim=1)
    shift = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    log2e = torch.tensor(1.4426950408889634, dtype=torch.float32)
    terms = torch.exp2(v * log2e - (shift * log2e)[:, None])
    # 32 partial sums, each accumulated sequentially: the slowest summation the model allows.
    cols = v.shape[1]
    pad = (-cols) % 32
    lanes = torch.nn.functional.pad(terms, (0, pad)).reshape(v.shape[0], -1, 32)
    acc = torch.zeros(v.shape[0], 32, dtype=torch.float32)
    for step in range(lanes.shape[1]):
        acc = acc + lanes[:, step, :]
    out = shift + torch.log(acc.sum(dim=1))
    return torch.where(torch.isfinite(m), out, m)


rows = st.integers(1, 6)
cols = st.sampled_from([1, 2, 3, 31, 32, 33, 100, 1000, 4097])
scales = st.sampled_from([1e-3, 1.0, 30.0, 1e3, 1e6, 1e30])
offsets = st.sampled_from([0.0, -100.0, 88.0, -1e4, 1e6])


@settings(max_examples=80, deadline=None)
@given(m=rows, n=cols, scale=scales, offset=offsets, seed=st.integers(0, 2**16),
       dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16]))
def test_correct_float32_implementations_are_inside_the_bound(m, n, scale, offset, seed, dtype):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(m, n, generator=gen, dtype=torch.float64) * scale + offset).to(dtype)
    for impl in (_lse_float32_exp2, lambda t: torch.logsumexp(t.float(), dim=1)):
        comparison = compare(x, impl(x))
        assert comparison.ok, (comparison.error.max(), comparison.bound.min())


def test_an_error_of_a_few_bounds_is_caught():
    torch.manual_seed(0)
    x = torch.randn(64, 1000)
    expected = lse_reference(x)
    bound = allowed_error(x, expected, out_dtype=torch.float64)
    assert compare(x, expected + 0.5 * bound).ok
    assert compare(x, expected + 1.5 * bound).mismatches == 64
    # The canonical bug (max not added back) is many bounds away.
    shifted = (expected - x.double().amax(dim=1)).float()
    assert compare(x, shifted).mismatches > 60


def test_bound_terms():
    x = torch.tensor([[0.0, 0.0], [1e6, 1e6], [0.0, -1e30]])
    bound = allowed_error(x, lse_reference(x))
    assert bound[1] > 100 * bound[0]  # grows with the magnitude of the entries that matter
    # -1e30 is far below the max: exp underflows to 0 for every kernel, so it earns no tolerance.
    assert bound[2] == pytest.approx(bound[0], rel=0.01)
    assert allowed_error(torch.zeros(1, 4096), torch.tensor([math.log(4096)]))[0] > bound[0]  # longer rows


def test_output_dtype_sets_the_rounding_term():
    x = torch.full((1, 4), 100.0)
    y = lse_reference(x)
    assert allowed_error(x, y, out_dtype=torch.bfloat16)[0] > 100 * UNIT_ROUNDOFF[torch.bfloat16]
    assert allowed_error(x, y, out_dtype=torch.float32)[0] < 1e-3


@pytest.mark.parametrize(
    "got, expected_ok",
    [(math.inf, True), (-math.inf, False), (math.nan, False), (1e30, False)],
    ids=["same inf", "opposite inf", "nan for inf", "finite for inf"],
)
def test_non_finite_results_must_match_exactly(got, expected_ok):
    x = torch.tensor([[1.0, math.inf]])
    assert compare(x, torch.tensor([got])).ok is expected_ok


def test_nan_expected_needs_nan():
    x = torch.tensor([[1.0, math.nan]])
    assert compare(x, torch.tensor([math.nan])).ok
    assert not compare(x, torch.tensor([1.0])).ok
