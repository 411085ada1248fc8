"""Eager PyTorch in float32: torch.logsumexp(x.float(), dim=1), float32 out for every input dtype.

The common "upcast, reduce, keep float32" idiom (loss functions that take half logits and return
a float32 normalizer). float16/bfloat16 convert to float32 exactly, so the result is torch's
float32 log-sum-exp of the same numbers. float64 input is rounded to float32 *before* the
reduction: values past float32's range become +-inf there (a row of 1e300 gives +inf, which is
also what rounding the exact answer to float32 gives), and all precision beyond float32's is lost.

Output: float32 for every input dtype.
"""

from __future__ import annotations

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor, computed and returned in float32."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    # x.float() is x itself for float32 input: logsumexp only reads it, and returns a new tensor.
    return torch.logsumexp(x.float(), dim=1)
