"""The gradient: its float64 oracle (against torch's own float64 autograd and mpmath), the tolerance
(correct backwards inside it in every dtype, torch's included; the canonical backward bugs outside),
and ``reference.lse_autograd``, the Triton backward, across its contract."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.interpreter import bfloat16
from reference import (
    InvalidArgument,
    compare_gradient,
    lse_autograd,
    lse_backward,
    lse_grad_reference,
    lse_reference,
)

INF, NAN = math.inf, math.nan
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
EDGE_ROWS = [[-INF, -INF], [INF, 1.0], [INF, INF], [NAN, 1.0], [-INF, 1.0], [INF, -INF], [1.0, 2.0]]

bfloat16.install()  # conversions rounded as on a GPU, as the fuzzer runs kernels


def _torch_lse(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x, dim=1)


def _gradient(fn, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    leaf = x.detach().clone().requires_grad_(True) if x.is_contiguous() else x.detach().requires_grad_(True)
    out = fn(leaf)
    (dx,) = torch.autograd.grad(out, leaf, grad.to(out.dtype))
    return dx


def _assert_inside(x, grad, dx):
    comparison = compare_gradient(x, grad, dx)
    where = comparison.first_mismatch()
    assert where is None, comparison.explain(*where)


def test_the_oracle_is_torchs_float64_gradient_edges_included():
    x = torch.tensor(EDGE_ROWS, dtype=torch.float64)
    grad = torch.tensor([1.0, -2.0, 0.5, 3.0, 1.5, 0.0, -1.0], dtype=torch.float64)
    torch.testing.assert_close(lse_grad_reference(x, grad), _gradient(_torch_lse, x, grad), equal_nan=True,
                               rtol=1e-15, atol=0)


def test_the_oracle_against_mpmath():
    torch.manual_seed(0)
    x = torch.randn(3, 17, dtype=torch.float64) * 40
    grad = torch.randn(3, dtype=torch.float64)
    got = lse_grad_reference(x, grad)
    mpmath.mp.dps = 50
    for i in range(3):
        total = mpmath.fsum(mpmath.exp(mpmath.mpf(float(v))) for v in x[i])
        for j in range(17):
            exact = mpmath.mpf(float(grad[i])) * mpmath.exp(mpmath.mpf(float(x[i, j]))) / total
            # float64's own rounding of the exponent x - y: u (|x| + |y| + |x - y|), a few times over;
            # 2**29 times below the float32 term of the tolerance, so the oracle's error never matters.
            y = float(lse_reference(x[i:i + 1])[0])
            reach = 4 * 2.0**-53 * (abs(float(x[i, j])) + abs(y) + abs(float(x[i, j]) - y) + 8)
            assert abs(float(got[i, j]) - float(exact)) <= reach * abs(float(exact))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("fn", [_torch_lse, lse_autograd], ids=["torch.logsumexp", "reference.lse_autograd"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 4), cols=st.integers(1, 700), scale=st.sampled_from([1.0, 30.0, 1e4]), seed=st.integers(0, 2**16))
def test_correct_backwards_are_inside_in_every_dtype(fn, dtype, rows, cols, scale, seed):
    generator = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, cols, generator=generator, dtype=torch.float64) * scale).to(dtype)
    grad = torch.randn(rows, generator=generator) * 3
    _assert_inside(x, grad, _gradient(fn, x, grad))


@pytest.mark.parametrize("fn", [_torch_lse, lse_autograd], ids=["torch.logsumexp", "reference.lse_autograd"])
def test_edge_rows_follow_torch(fn):
    x = torch.tensor(EDGE_ROWS)
    grad = torch.ones(len(EDGE_ROWS))
    dx = _gradient(fn, x, grad)
    assert torch.isnan(dx[0]).all() and torch.isnan(dx[2]).all() and torch.isnan(dx[3]).all()
    assert torch.isnan(dx[1, 0]) and dx[1, 1] == 0 and dx[4].tolist() == [0.0, 1.0]
    _assert_inside(x, grad, dx)


def _broken(kind: str):
    """Backwards with one canonical bug each, written as people write them in torch."""
    def backward(x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        values, y = x.double(), lse_reference(x)
        softmax = torch.exp(values - y[:, None])
        dx = {
            "upstream gradient not applied": softmax,
            "softmax not normalised": torch.exp(values - values.amax(dim=1, keepdim=True)) * grad.double()[:, None],
            "softmax of the next row": torch.roll(softmax, 1, dims=0) * grad.double()[:, None],
            "NaN rows as zeros": torch.nan_to_num(softmax * grad.double()[:, None], nan=0.0),
        }[kind]
        return dx.to(x.dtype)
    return backward


@pytest.mark.parametrize("kind", ["upstream gradient not applied", "softmax not normalised", "softmax of the next row"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_canonical_backward_bugs_are_outside(kind, dtype):
    torch.manual_seed(1)
    x = torch.randn(4, 33).to(dtype)
    grad = torch.tensor([2.0, -3.0, 0.25, 5.0])
    comparison = compare_gradient(x, grad, _broken(kind)(x, grad))
    assert not comparison.ok
    row, col = comparison.first_mismatch()
    assert f"dx[{row}, {col}]" in comparison.explain(row, col) and "accepted [" in comparison.explain(row, col)


def test_a_number_where_torch_gives_nan_is_outside():
    x = torch.tensor([[-INF, -INF], [1.0, 2.0]])
    grad = torch.ones(2)
    comparison = compare_gradient(x, grad, _broken("NaN rows as zeros")(x, grad))
    assert comparison.first_mismatch() == (0, 0)
    assert "non-finite value must match" in comparison.explain(0, 0)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)])
def test_empty_inputs(shape):
    x = torch.zeros(shape)
    dx = _gradient(lse_autograd, x, torch.ones(shape[0]))
    assert dx.shape == x.shape


def test_strided_input_and_upstream_gradient():
    torch.manual_seed(2)
    x = torch.randn(7, 300).t()  # a column-major (300, 7) view
    grad = torch.randn(600)[::2]  # a strided upstream gradient
    _assert_inside(x, grad, _gradient(lse_autograd, x, grad))


def test_the_backward_is_a_new_tensor_and_leaves_its_inputs():
    x = torch.randn(3, 40)
    out = lse_autograd(x)
    grad = torch.ones(3)
    before = (x.clone(), out.clone(), grad.clone())
    dx = lse_backward(x, out, grad)
    assert dx.data_ptr() not in (x.data_ptr(), out.data_ptr(), grad.data_ptr()) and dx.is_contiguous()
    for kept, now in zip(before, (x, out, grad)):
        assert torch.equal(kept, now)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: lse_backward(torch.zeros(3, 4), torch.zeros(3), torch.zeros(2)), "grad.shape=(2,); expected (3,)"),
    (lambda: compare_gradient(torch.zeros(3, 4), torch.zeros(3), torch.zeros(4, 3)), "got.shape=(4, 3)"),
    (lambda: lse_grad_reference(torch.zeros(3, 4), [1.0, 2.0, 3.0]), "expected a floating torch.Tensor"),
], ids=["backward", "compare", "oracle"])
def test_bad_arguments_name_the_value(call, message):
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()
