"""Unsloth's fast cross-entropy (Triton kernels), the LSE recovered from its per-row loss.

Unsloth patches the causal-LM loss of the models it trains with `fast_cross_entropy_loss`
(unsloth/kernels/cross_entropy_loss.py), which reshapes the logits to (rows, V) and calls the
autograd function `Fast_CrossEntropyLoss`; the adapter calls that function, which returns the
unreduced float32 loss. For V <= 65536 one program per row computes, with c = max_j x[i, j],

    lse_others_i = c + log(sum_{j != target} exp(x[i, j] - c)),   loss_i = softplus(lse_others_i - x[i, target_i])

and softplus(a - b) = log(1 + exp(a - b)) = logsumexp(a, b) - b, so loss_i = lse_i - x[i, target_i]
(the form Unsloth chose so that a confident label's loss does not round to 0). For larger V each
chunk of 65536 columns computes its own, then torch.logsumexp merges them. Either way

    lse_i = loss_i + x[i, target_i],

and with target_i = argmax_j x[i, j] the loss lies in [0, log N], so adding the target logit back
costs one float32 rounding (as for Liger's cross-entropy, liger_cross_entropy.py).

Unsloth refuses to import without an accelerator unless UNSLOTH_ALLOW_CPU=1, its own switch for
testing on a CPU (it then takes every CUDA branch, as on a GPU); the adapter sets it when torch
sees no GPU, and the kernels run in Triton's interpreter. Importing Unsloth also imports (and
patches) transformers, peft, trl and unsloth_zoo, and takes about 30 s.

Cross-entropy defines no loss for a row with no finite logit nor for N = 0: the adapter answers
those itself. Declared contract: finite values (a +inf logit makes the loss inf - inf), dtypes
float32, float16, bfloat16 (Unsloth trains in float16 and bfloat16), a float32 result.

Run with unsloth 2026.10.9 and unsloth_zoo 2026.10.9 (installed without their GPU-only
dependencies, see the README):

    lse-fuzz check examples/real_world/unsloth_cross_entropy.py:lse --device cpu \
        --contract finite --dtypes float32,float16,bfloat16 --output-dtype float32
"""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("UNSLOTH_ALLOW_CPU", "1")

from unsloth.kernels.cross_entropy_loss import Fast_CrossEntropyLoss  # noqa: E402  (after the switch above)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp from Unsloth's per-row cross-entropy loss."""
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=torch.float32, device=x.device)
    target = x.argmax(dim=1)
    loss = Fast_CrossEntropyLoss.apply(x, target)
    target_logit = x.gather(1, target[:, None])[:, 0]
    recovered = loss.float() + target_logit.float()
    no_finite_logit = torch.isneginf(x).all(dim=1)
    return torch.where(no_finite_logit, torch.full_like(recovered, -math.inf), recovered)
