"""The gradient checks (``--backward``): a correct backward passes them on every edge; each broken
backward fails the check that names its bug, with expected, got and the accepted interval."""

from __future__ import annotations

import math

import pytest
import torch

import reference
from fuzz.checks import GRADIENT_CHECKS, CheckFailure, Plan, run_checks
from fuzz.gradient import NotDifferentiable, gradient_of, upstream_gradient
from fuzz.layouts import Layout, LayoutKind
from fuzz.strategies import LseInput, RowSpec

INF, NAN = math.inf, math.nan


def example(values, layout: Layout = Layout(), dtype=torch.float32) -> LseInput:
    values = torch.as_tensor(values, dtype=dtype)
    return LseInput(x=layout.materialize(values), values=values, layout=layout, specs=(RowSpec("small"),), seed=0)


def run(impl, ex: LseInput, checks=None) -> None:
    run_checks(impl, ex, checks=checks, plan=Plan(None, 0), gradient_impl=gradient_of(impl))


def torch_lse(x):
    return torch.logsumexp(x, dim=1)


class _Broken(torch.autograd.Function):
    """The forward is right; the backward has the bug named by ``kind``."""

    @staticmethod
    def forward(ctx, x, kind):
        out = torch.logsumexp(x.double(), dim=1).to(torch.float32)
        ctx.save_for_backward(x, out)
        ctx.kind = kind
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        values = x.float()
        if ctx.kind == "upstream gradient not applied":
            return torch.exp(values - out[:, None]).to(x.dtype), None
        if ctx.kind == "softmax without the max shift":
            e = torch.exp(values)
            return (grad[:, None] * e / e.sum(dim=1, keepdim=True)).to(x.dtype), None
        if ctx.kind == "gradient written over the input":
            x.copy_((grad[:, None] * torch.exp(values - out[:, None])).to(x.dtype))
            return x, None
        if ctx.kind == "gradient written past the view":
            _poke_outside_the_view(x)
            return (grad[:, None] * torch.exp(values - out[:, None])).to(x.dtype), None
        if ctx.kind == "gradient in float32":
            return grad[:, None] * torch.exp(values - out[:, None]), None
        raise AssertionError(ctx.kind)


def _poke_outside_the_view(x: torch.Tensor) -> None:
    """Writes 42 into the first element of x's storage that the view does not cover (its padding)."""
    flat = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage())
    covered = torch.zeros(flat.numel(), dtype=torch.bool)
    covered[torch.as_strided(torch.arange(flat.numel()), x.shape, x.stride(), x.storage_offset()).flatten()] = True
    flat[int(torch.nonzero(~covered)[0])] = 42


def broken(kind):
    def lse(x):
        return _Broken.apply(x, kind)
    return lse


@pytest.mark.parametrize("impl", [torch_lse, reference.lse_autograd], ids=["torch.logsumexp", "reference"])
@pytest.mark.parametrize("layout", [Layout(), Layout(LayoutKind.TRANSPOSED, pad=1)], ids=lambda lay: lay.kind.value)
def test_correct_backwards_pass_on_edge_rows(impl, layout):
    rows = [[-INF, -INF, -INF], [INF, 1.0, 0.0], [NAN, 1.0, 2.0], [-INF, 1.0, 2.0], [1.0, 2.0, 3.0],
            [-80.0, 80.0, 0.0], [0.0, 0.0, 0.0]]
    run(impl, example(rows, layout))


@pytest.mark.parametrize(("kind", "check", "texts"), [
    ("upstream gradient not applied", "grad_agreement",
     ["dx[0, 0] differs from g[0] * softmax(x[0])[0] in float64", "upstream: g[0] = -2.0", "accepted ["]),
    ("softmax without the max shift", "grad_agreement", ["dx[1, 0] differs", "got:      nan"]),
    ("gradient written over the input", "grad_input_unchanged",
     ["the forward and backward changed the input at x[0, 0]", "before:   0x"]),
])
def test_each_broken_backward_fails_the_check_that_names_it(kind, check, texts):
    ex = example([[1.0, 2.0, 3.0], [100.0, 99.0, 0.0]])
    with pytest.raises(CheckFailure) as info:
        run(broken(kind), ex)
    assert info.value.check == check
    message = info.value.message()
    assert f"  why it matters: {GRADIENT_CHECKS[check].why}" in message
    for text in texts:
        assert text in message, f"{text!r} not in:\n{message}"


def test_a_backward_that_writes_past_the_view_fails_grad_input_unchanged():
    # The forward leaves the storage alone (input_unchanged passes); the backward writes into the
    # padding of a transposed view, which belongs to the caller.
    ex = example([[1.0, 2.0, 3.0], [100.0, 99.0, 0.0]], Layout(LayoutKind.TRANSPOSED, pad=1))
    with pytest.raises(CheckFailure) as info:
        run(broken("gradient written past the view"), ex)
    assert info.value.check == "grad_input_unchanged"
    assert "the forward and backward wrote into the input's storage outside the view" in info.value.message()


def test_autograd_converts_a_gradient_to_the_inputs_dtype_so_no_check_needs_to():
    # A backward returning float32 for a float16 input: autograd hands on float16 (and raises on a
    # wrong shape), so the gradient's dtype and shape are autograd's contract, not a check's.
    x = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float16)
    dx = gradient_of(broken("gradient in float32"))(x)
    assert dx.dtype == torch.float16
    run(broken("gradient in float32"), example(x.float().tolist(), dtype=torch.float16))


def test_without_a_gradient_the_gradient_checks_do_not_run():
    run_checks(broken("upstream gradient not applied"), example([[1.0, 2.0]]), plan=Plan(None, 0))


def test_the_upstream_gradient_is_exact_in_every_dtype_and_holds_zeros_and_negatives():
    g = upstream_gradient(40, torch.float64, "cpu")
    assert (g == 0).any() and (g < 0).any() and g.abs().max() == 2
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        assert torch.equal(upstream_gradient(40, dtype, "cpu").double(), g)


@pytest.mark.parametrize(("impl", "text"), [
    (lambda x: torch.logsumexp(x, dim=1).detach(), "does not require grad"),
    (lambda x: (torch.logsumexp(x, dim=1), None), "returned tuple, not a tensor"),
    (lambda x: torch.logsumexp(x.detach(), dim=1) + torch.zeros(x.shape[0], requires_grad=True),
     "no path from the input to the result"),
], ids=["no graph", "a tuple", "detached input"])
def test_an_implementation_autograd_cannot_differentiate_is_bad_input(impl, text):
    with pytest.raises(NotDifferentiable, match=text):
        gradient_of(impl)(torch.zeros(2, 3))
