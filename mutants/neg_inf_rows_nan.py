"""Mutant: all -inf rows give NaN: -inf - (-inf), the shift and rescale guards removed.

Patch: the last lines of ``_update`` (reference/_lse_kernel.py) shift by the running max
unguarded (``shift = new_max`` instead of ``_shift(new_max)``: the exponent is x - new_max) and
rescale with ``tl.exp(run_max - new_max)`` instead of ``_rescale(run_max, new_max)``: the textbook
online update, without the guards the reference's ``_shift`` and ``_rescale`` exist for.

Pitfall: a fully masked row (all -inf: padding, a causal mask, an empty attention window) has max
-inf, and x - max = -inf - (-inf) = NaN, so the row comes out NaN instead of -inf; the same
happens while a row's leading tiles are all -inf, and for +inf rows (inf - inf). torch.logsumexp
returns -inf for such rows (an empty sum is 0, log 0 = -inf).

Documented: rmcgibbo/logsumexp#2 ("logsumexp([-np.inf, -np.inf]) is nan");
tensorflow/tensorflow#11692 (reduce_logsumexp of -inf); pytorch/pytorch#41508 (NaN from fully
masked attention rows) and pytorch/pytorch#131060 (_safe_softmax).

Killed by: ``agreement`` (rows of recipes all_neg_inf, leading_neg_inf, pos_inf). ``bounds``,
``shift_invariance``, ``permutation_invariance`` and ``fresh_values`` catch it too, through rows
whose first tile is all -inf and whose later tiles are finite: the NaN from the first tile poisons
the running sum, and a finite answer comes out NaN.

Minimal input: ``[[-inf]]`` -> expected -inf, got NaN.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = (
    "shift = _shift(new_max)\n"
    "    terms = _exp(x0, shift) + _exp(x1, shift) + _exp(x2, shift) + _exp(x3, shift)\n"
    "    return new_max, run_sum * _rescale(run_max, new_max)"
)
REPLACEMENT = (
    "shift = new_max\n"
    "    terms = _exp(x0, shift) + _exp(x1, shift) + _exp(x2, shift) + _exp(x3, shift)\n"
    "    return new_max, run_sum * tl.exp(run_max - new_max)"
)


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[-float("inf")]], device=device)
