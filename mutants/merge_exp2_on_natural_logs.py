"""Mutant: the weights of natural-log LSEs are taken with exp2, without the factor log2(e).

Patch: in ``_merge_weights`` (reference/_merge_state_kernel.py) the natural-log branch (``BASE2``
false) computes ``e_x = tl.exp2(t_x)`` instead of ``tl.exp2(t_x * LOG2E)``: 2^(s_x - m) where
e^(s_x - m) was meant (and then s = m + ln(2^(s_a - m) + 2^(s_b - m)), wrong too).

Pitfall: exp2 is the GPU's fast exponential, and kernels built on it keep their LSEs in base 2
(FlashInfer, TRT-LLM); a kernel that takes natural-log LSEs (FlashAttention, vLLM) must scale by
log2(e) first. Drop the scale, or hand one convention's LSEs to the other's merge, and the ratio of
the two weights is 2^d instead of e^d (d = s_b - s_a): the lower state is over-weighted by
e^(0.307 |d|). Nothing fails and the output looks plausible; equal LSEs (weights 1/2 in any base),
one empty state, and gaps so large that the lower weight vanishes either way all hide it.

Documented: sgl-project/sglang#40903 (base-2 LSEs merged by a natural-log merge_state_v2 on the
DeepSeek chunked-prefix path: the cached prefix silently over-weighted); vllm-project/vllm#52796
(FlashInfer's base-2 prefill LSE normalized before merging).

Killed by: ``agreement`` on a pair of finite states with different LSEs (an ordinary draw).

Minimal input: one token, one head, D = 3, v_a = 0, v_b = 1, s_a = 0, s_b = 1 -> expected
s = ln(1 + e) = 1.3133 and v = e / (1 + e) = 0.7311, got s = 1 + ln(1.5) = 1.4055 and v = 2/3.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"
FUNCTION = "merge_state"
OP = "merge_state"

PATH = "reference/_merge_state_kernel.py"
ANCHOR = ("e_a = tl.exp2(t_a * LOG2E)\n"
          "        e_b = tl.exp2(t_b * LOG2E)")
REPLACEMENT = ("e_a = tl.exp2(t_a)\n"
               "        e_b = tl.exp2(t_b)")


def minimal_input(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    v_a = torch.zeros(1, 1, 3, device=device)
    v_b = torch.ones(1, 1, 3, device=device)
    return v_a, torch.tensor([[0.0]], device=device), v_b, torch.tensor([[1.0]], device=device)
