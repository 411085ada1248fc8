"""flash-linear-attention's fused cross-entropy (a Triton kernel), the LSE recovered from its loss.

fla.modules.fused_cross_entropy.cross_entropy_loss(logits, target) returns the unreduced float32
loss (and the z-loss); its kernel splits each row into chunks of BV = min(next_pow2(V), 65536)
columns, computes each chunk's max + log(sum(exp(x - max))) and merges the chunks' LSEs in a second
kernel. With no label smoothing, no z-loss and logit_scale 1

    loss_i = lse_i - x[i, target_i]      so      lse_i = loss_i + x[i, target_i],

and with target_i = argmax_j x[i, j] the loss lies in [0, log N], so adding the target logit back
costs one float32 rounding. As for Liger's cross-entropy (liger_cross_entropy.py), the adapter
answers rows with no finite logit and N = 0 itself (cross-entropy defines no loss there).
Declared contract: finite values, dtypes float32, float16, bfloat16, float32 output.

Run with flash-linear-attention 0.6.0 / fla-core 0.6.0 (CPU through Triton's interpreter; H200).
Checked with

    lse-fuzz check examples/real_world/fla_cross_entropy.py:lse --device cpu \
        --contract finite --dtypes float32,float16,bfloat16 --output-dtype float32
"""

from __future__ import annotations

import math

import torch
from fla.modules.fused_cross_entropy import cross_entropy_loss


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp from fla's per-row fused cross-entropy loss."""
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=torch.float32, device=x.device)
    target = x.argmax(dim=1)
    loss, _ = cross_entropy_loss(x, target)
    target_logit = x.gather(1, target[:, None])[:, 0]
    recovered = loss.float() + target_logit.float()
    no_finite_logit = torch.isneginf(x).all(dim=1)
    return torch.where(no_finite_logit, torch.full_like(recovered, -math.inf), recovered)
