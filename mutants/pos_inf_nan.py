"""Mutant: rows holding +inf give NaN: inf - inf, because the shift is guarded for -inf only.

Patch: ``_shift`` (reference/_lse_combine.py) counts a max as finite when it is not -inf
(``finite = m != -float("inf")``), so a +inf max is subtracted from the row and the +inf entry
becomes inf - inf = NaN.

Pitfall: the guard against -inf - (-inf) (fully masked rows) is the one everybody meets first; the
symmetric case, a +inf logit, gets forgotten. torch.logsumexp returns +inf for a row holding +inf
(even beside -inf), while the shifted formula evaluates exp(inf - inf) = NaN.

Documented: pytorch/pytorch#6864 (softmax returns NaN when one +inf is present);
pytorch/pytorch#49724 (unnecessary NaN from +-inf in logsumexp); bdusell/semiring-einsum#13
(log_einsum returns NaN instead of inf).

Killed by: ``agreement`` (rows of recipes pos_inf and pos_and_neg_inf); nothing else, since both
calls of a metamorphic pair agree on NaN.

Minimal input: ``[[inf]]`` -> expected +inf, got NaN.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_combine.py"
ANCHOR = 'finite = (m != float("inf")) & (m != -float("inf"))'
REPLACEMENT = 'finite = m != -float("inf")'


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[float("inf")]], device=device)
