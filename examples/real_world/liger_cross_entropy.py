"""Liger-Kernel's cross-entropy (a Triton kernel), the LSE recovered from its per-row loss.

Liger's kernel computes lse_i = m_i + log d_i with an online softmax (liger_kernel/ops/cross_entropy.py)
and returns, with reduction="none", the per-row loss

    loss_i = lse_i - x[i, target_i]      so      lse_i = loss_i + x[i, target_i].

The adapter calls it as a training loop does (liger_kernel.transformers.functional.liger_cross_entropy)
with target_i = argmax_j x[i, j]: then loss_i = log(sum_j exp(x[i, j] - max_i)) lies in [0, log N],
so adding x[i, target_i] back costs one rounding. The loss comes back in x's dtype (Liger allocates
it so, like torch.nn.functional.cross_entropy), so the LSE is answered in x's dtype too.

Cross-entropy defines no loss for N = 0 (there is no class to target) nor for a row of all -inf
logits (the target logit is -inf: torch.nn.functional.cross_entropy gives NaN there too), and Liger
raises on an empty batch (M = 0; docs/bugs-found.md). The adapter answers these itself (-inf rows,
an empty result), so the fuzzer looks past them; those inputs say nothing about Liger. Declared
contract: finite values (a +inf logit makes the loss inf - inf, undefined for cross-entropy, and
torch.nn.functional.cross_entropy gives NaN too), dtypes float32, float16, bfloat16 (Liger's tests
run these).

Run with liger-kernel 0.8.5 (CPU through Triton's interpreter; H200). Checked with

    lse-fuzz check examples/real_world/liger_cross_entropy.py:lse --device cpu \
        --contract finite --dtypes float32,float16,bfloat16 --output-dtype input
"""

from __future__ import annotations

import math

import torch
from liger_kernel.transformers.functional import liger_cross_entropy


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp from Liger's per-row cross-entropy loss."""
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=x.dtype, device=x.device)
    target = x.argmax(dim=1)
    loss = liger_cross_entropy(x, target, reduction="none")
    target_logit = x.gather(1, target[:, None])[:, 0]
    recovered = (loss.float() + target_logit.float()).to(x.dtype)
    no_finite_logit = torch.isneginf(x).all(dim=1)
    return torch.where(no_finite_logit, torch.full_like(recovered, -math.inf), recovered)
