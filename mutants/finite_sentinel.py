"""Mutant: masked lanes read a finite sentinel, -1e30, instead of -inf.

Patch: in ``_load`` (reference/_lse_kernel.py) the masked load's ``other=-float("inf")`` becomes
``other=-1e30``.

Pitfall: "a very negative number" stands in for -inf in many hand-written kernels (to dodge
-inf - (-inf) = NaN): it works while a row holds a finite value above it, and breaks on a row of
all -inf (an attention row with every key masked, a vocabulary row with every class excluded),
where the padding becomes the maximum: the answer is -1e30 + log(padding lanes), not -inf. In
float16 the sentinel rounds to -inf and the bug hides; in float32, bfloat16 and float64 it shows.

Documented: Milakov and Gimelshein (2018), "Online normalizer calculation for softmax" (the running
max starts at -inf, the identity of max); the all -inf row -> -inf semantics of torch.logsumexp,
scipy.special.logsumexp and jax.nn.logsumexp.

Killed by: ``agreement`` (an all -inf row whose length leaves masked lanes in its last tile).

Minimal input: ``[[-inf, -inf, -inf]]`` float32 -> expected -inf, got -1e30.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = 'x = tl.load(ptrs, mask=(cols < col_end)[None, :], other=-float("inf"))'
REPLACEMENT = "x = tl.load(ptrs, mask=(cols < col_end)[None, :], other=-1e30)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.full((1, 3), float("-inf"), device=device)
