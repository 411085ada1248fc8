"""Mutant: the merged v weighs each state by its exponential against the max, not renormalized.

Patch: in ``_merge_weights`` (reference/_merge_state_kernel.py) the weights returned are ``e_a`` and
``e_b``, not ``e_a / total`` and ``e_b / total``.

Pitfall: each state's v is already normalized by its own softmax denominator, so the merge must
rescale it by exp(s_x - s), with s the merged LSE: the share of the keys' total weight that the
state holds. The max shift alone is not that: it makes the larger state's factor exactly 1, and a
kernel that stops there returns v_a + e^(s_b - s_a) v_b. That is right where one state is empty or
the other is far below, and wrong by up to a factor of 2 where the LSEs are close (equal LSEs give
v_a + v_b instead of their mean). s is still right, so a test that checks only the LSE passes.

Documented: Dao, Haziza, Massa and Sizov (2023), "Flash-Decoding for long-context inference" (the
final reduction rescales each split's output by exp(lse_k - lse), the combine of FlashAttention's
split-KV decoding); Milakov and Gimelshein (2018), "Online normalizer calculation for softmax" (the
running normalizer is rescaled to each new max, and the result divided by it).

Killed by: ``agreement`` on a pair of finite states whose LSEs are close (ordinary or equal draws).

Minimal input: one token, one head, D = 3, v_a = v_b = 1, s_a = s_b = 0 -> expected v = 1 (and
s = ln 2), got v = 2 (s right).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"
FUNCTION = "merge_state"
OP = "merge_state"

PATH = "reference/_merge_state_kernel.py"
ANCHOR = "return e_a / total, e_b / total, s, nan"
REPLACEMENT = "return e_a, e_b, s, nan"


def minimal_input(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    v = torch.ones(1, 1, 3, device=device)
    s = torch.zeros(1, 1, device=device)
    return v, s, v.clone(), s.clone()
