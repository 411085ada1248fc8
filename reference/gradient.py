"""The gradient of the row-wise LogSumExp: its float64 oracle and the tolerance a correct backward needs.

For out_i = lse(x)_i and an upstream gradient g (shape (M,)):

    dx_ij = g_i * p_ij,    p_ij = exp(x_ij - y_i) = softmax(x_i)_j,    y_i = lse(x)_i (the float64 oracle)

Edge semantics are torch's (torch.logsumexp's backward is g * exp(x - out)), which are the formula's:
an all -inf row gives NaN everywhere (-inf - (-inf)), a row with +inf gives NaN where x is +inf and 0
elsewhere, a NaN row gives NaN, and N = 0 or M = 0 an empty gradient.

The tolerance, derived as the forward's is (``reference.tolerance``), for a gradient in dtype D
(x's dtype, as torch returns it). A correct backward computes exp(x - y~) g with y~ the forward's
result, maybe rounded to D (torch keeps its output, so in bfloat16 it uses a bfloat16 y):

* the exponent t_ij = x_ij - y_i carries an absolute error of at most
  e_ij = a_i + u_acc (|x_ij| + |y_i| + |t_ij|) + u_D |t_ij|:  a_i the forward's allowance for an
  output in D (``allowed_error``: the accumulation error and y rounded to D), the subtraction and
  an exp2-based kernel's scaling by log2(e) in float32 (u_acc), and the subtraction done in D where
  a kernel works in D as torch does;
* exp, the product with g and the conversions of p and g to D each round once more: 3 u_D +
  FIXED_ULPS u_acc, relative;
* a product below D's normal range loses at most half D's smallest subnormal per rounding, and one
  computed in float32 half of float32's: 2 |g_i| eta_D + |g_i| eta_acc, absolute.

So  |dx~_ij - dx_ij| <= b_ij = |g_i| (exp(t_ij + K r_ij) - exp(t_ij) + 2 eta_D + eta_acc),  r_ij = e_ij +
3 u_D + FIXED_ULPS u_acc, K = 2 as in the forward; and, as there, the judgement is in D: the accepted
values are [down_D(dx - b), up_D(dx + b)]. Where |x| is large the exponent's error is large too
(a float32 kernel cannot tell x - y to better than u |x|): the interval widens as the numerics say.
What stays outside: g not applied, a softmax without its normalisation or of the wrong row, an
exponent off by whole units (a max not subtracted where the sum is), NaN where a number is due.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .errors import InvalidArgument
from .oracle import lse_reference, validate_input
from .tolerance import (
    ACCUMULATION_DTYPE,
    FIXED_ULPS,
    SAFETY_FACTOR,
    UNIT_ROUNDOFF,
    acceptance_interval,
    allowed_error,
    in_interval,
)


def validate_gradient_input(x: object, grad: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Check ``x`` (as the forward's input) and ``grad`` (shape (M,), floating); return both."""
    x = validate_input(x)
    if not isinstance(grad, torch.Tensor) or not grad.is_floating_point():
        raise InvalidArgument(f"grad={grad!r}; expected a floating torch.Tensor of shape ({x.shape[0]},).")
    if tuple(grad.shape) != (x.shape[0],):
        raise InvalidArgument(f"grad.shape={tuple(grad.shape)}; expected ({x.shape[0]},), the shape of lse(x).")
    return x, grad


def lse_grad_reference(x: torch.Tensor, grad: torch.Tensor, *, expected: torch.Tensor | None = None) -> torch.Tensor:
    """dx = grad[:, None] * exp(x - lse(x)[:, None]) in float64, shape (M, N), on ``x.device``, with
    torch's edge semantics (NaN for all -inf rows, NaN at +inf entries, NaN rows). ``expected``: the
    forward oracle's result, when the caller has it."""
    x, grad = validate_gradient_input(x, grad)
    y = lse_reference(x) if expected is None else expected.to(device=x.device, dtype=torch.float64)
    values = x.to(torch.float64)
    return grad.to(device=x.device, dtype=torch.float64)[:, None] * torch.exp(values - y[:, None])


def gradient_bound(x: torch.Tensor, grad: torch.Tensor, expected_dx: torch.Tensor, expected: torch.Tensor,
                   *, dtype: torch.dtype) -> torch.Tensor:
    """b_ij of the module docstring: float64, shape (M, N), on the CPU; 0 where dx is not finite."""
    u_acc, u_d = UNIT_ROUNDOFF[ACCUMULATION_DTYPE], UNIT_ROUNDOFF[dtype]
    x64 = x.detach().to(device="cpu", dtype=torch.float64)
    y = expected.detach().to(device="cpu", dtype=torch.float64)
    g = grad.detach().to(device="cpu", dtype=torch.float64)
    dx = expected_dx.detach().to(device="cpu", dtype=torch.float64)
    forward = allowed_error(x.detach().cpu(), y, out_dtype=dtype)  # a_i: 0 where y is not finite
    finite_y = torch.where(torch.isfinite(y), y, torch.zeros_like(y))
    t = (x64 - finite_y[:, None]).abs()
    t = torch.where(torch.isfinite(t), t, torch.zeros_like(t))
    xs = torch.where(torch.isfinite(x64), x64.abs(), torch.zeros_like(x64))
    exponent = forward[:, None] + u_acc * (xs + finite_y.abs()[:, None] + t) + u_d * t
    reach = SAFETY_FACTOR * (exponent + 3 * u_d + FIXED_ULPS * u_acc)
    eta_d = _smallest_subnormal(dtype) / 2
    eta_acc = _smallest_subnormal(ACCUMULATION_DTYPE) / 2
    # |g| (exp(t + E) - exp(t)): the softmax's farthest value, computed as such rather than as
    # p * expm1(E), which is 0 * inf where p underflows and E is large (|t| of thousands in bfloat16).
    softmax = torch.exp(-t)
    farthest = torch.exp(-t + reach)
    # g = 0 makes dx exactly 0 whatever the softmax (0 * inf would be NaN where |x| nears the
    # range's end and the exponent's error is unbounded).
    spread = torch.where(g[:, None] == 0, torch.zeros_like(farthest), farthest - softmax)
    bound = g.abs()[:, None] * (spread + 2 * eta_d + eta_acc)
    return torch.where(torch.isfinite(dx), bound, torch.zeros_like(bound))


def _smallest_subnormal(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).smallest_normal) * float(torch.finfo(dtype).eps)


@dataclass(frozen=True)
class GradientComparison:
    """A candidate's gradient against the oracle, element by element, judged in its dtype D.

    Float64 / bool CPU tensors of shape (M, N): ``expected`` the oracle's dx, ``got`` the
    candidate's, ``low``/``high`` the accepted interval, ``mismatch`` the elements outside it.
    """

    expected: torch.Tensor
    got: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor
    mismatch: torch.Tensor
    dtype: torch.dtype

    @property
    def mismatches(self) -> int:
        return int(self.mismatch.sum())

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def first_mismatch(self) -> tuple[int, int] | None:
        where = torch.nonzero(self.mismatch)
        return (int(where[0, 0]), int(where[0, 1])) if where.shape[0] else None

    def explain(self, row: int, col: int) -> str:
        """One line: expected, got and the accepted interval of one element."""
        dtype = str(self.dtype).replace("torch.", "")
        expected, got = float(self.expected[row, col]), float(self.got[row, col])
        interval = f"accepted [{float(self.low[row, col])!r}, {float(self.high[row, col])!r}] in {dtype}"
        if not math.isfinite(expected):
            return f"dx[{row}, {col}]: expected {expected!r}, got {got!r}: a non-finite value must match ({interval})"
        return f"dx[{row}, {col}]: expected {expected!r}, got {got!r}, error {abs(got - expected):.6g}; {interval}"


def compare_gradient(x: torch.Tensor, grad: torch.Tensor, got: torch.Tensor, *,
                     expected: torch.Tensor | None = None) -> GradientComparison:
    """Compare a candidate's gradient ``got`` (shape (M, N)) for input ``x`` and upstream gradient
    ``grad`` with the oracle, in ``got``'s dtype (judged as float32 outside the supported four)."""
    x, grad = validate_gradient_input(x, grad)
    if tuple(got.shape) != tuple(x.shape):
        raise InvalidArgument(f"got.shape={tuple(got.shape)}; a gradient has x's shape {tuple(x.shape)}.")
    dtype = got.dtype if got.dtype in UNIT_ROUNDOFF else torch.float32
    y = lse_reference(x) if expected is None else expected
    dx = lse_grad_reference(x, grad, expected=y).cpu()
    bound = gradient_bound(x, grad, dx, y, dtype=dtype)
    low, high = acceptance_interval(dx, bound, out_dtype=dtype)
    got64 = got.detach().to(device="cpu").to(torch.float64)
    accepted = in_interval(got64, low, high)  # NaN where dx is NaN: the interval is NaN there
    return GradientComparison(expected=dx, got=got64, low=low, high=high, mismatch=~accepted, dtype=dtype)
