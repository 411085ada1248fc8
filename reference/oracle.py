"""The float64 oracle: what "right" means for every other implementation in this project.

For each row i of x (M, N):  lse(x)_i = m_i + log(sum_j exp(x_ij - m_i)),  m_i = max_j x_ij.

The sum is taken in the log1p form of Blanchard, Higham and Higham (2021), "Accurately computing the
log-sum-exp and softmax functions", IMA J. Numer. Anal. 41(4): one occurrence of the maximum
contributes exactly exp(0) = 1, so  lse = m + log1p(sum over the other entries), which stays accurate
when a single element dominates and the rest of the sum is far below float64's epsilon relative to 1
(the case where log(1 + s) loses s entirely; scipy issue 18295).

Edge semantics are exactly those of torch.logsumexp: a row of all -inf gives -inf; a +inf anywhere
(even beside -inf) gives +inf; a NaN anywhere gives NaN (it wins over +inf); N = 0 gives -inf;
M = 0 gives an empty result.
"""

from __future__ import annotations

import math

import torch

from .errors import InvalidArgument

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def validate_input(x: object, *, name: str = "x") -> torch.Tensor:
    """Check that ``x`` is a 2-D tensor of a supported floating dtype; return it."""
    if not isinstance(x, torch.Tensor):
        raise InvalidArgument(f"{name}={type(x).__name__} object; expected a 2-D torch.Tensor.")
    if x.dim() != 2:
        raise InvalidArgument(
            f"{name}.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor: reshape it to "
            "(rows, columns), e.g. x.reshape(-1, x.shape[-1])."
        )
    if x.dtype not in SUPPORTED_DTYPES:
        names = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)
        raise InvalidArgument(f"{name}.dtype={x.dtype}; supported dtypes are {names}: cast with x.float().")
    return x


def lse_reference(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D floating tensor, in float64, on ``x.device``.

    Computed from the input's own values (every supported dtype converts to float64 exactly), with
    the edge semantics of torch.logsumexp. Returns a float64 tensor of shape (M,).
    """
    validate_input(x)
    rows, cols = x.shape
    if cols == 0 or rows == 0:
        return torch.full((rows,), -math.inf, dtype=torch.float64, device=x.device)
    values = x.to(torch.float64)
    row_max = values.amax(dim=1)  # propagates NaN; NaN rows are overwritten below anyway
    # Shift by the max only where it is finite: an all -inf row or a +inf row has no finite shift,
    # and those rows get their value from the edge rules below, not from this arithmetic.
    shift = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    terms = torch.exp(values - shift[:, None])
    # Drop exactly one occurrence of the maximum (its term is exp(0) = 1) and add it back through
    # log1p, so a dominant element does not swamp the rest of the sum.
    argmax = values.nan_to_num(nan=-math.inf).argmax(dim=1, keepdim=True)
    terms.scatter_(1, argmax, 0.0)
    result = shift + torch.log1p(terms.sum(dim=1))
    result = torch.where(row_max == -math.inf, torch.full_like(result, -math.inf), result)
    result = torch.where((values == math.inf).any(dim=1), torch.full_like(result, math.inf), result)
    result = torch.where(torch.isnan(values).any(dim=1), torch.full_like(result, math.nan), result)
    return result
