"""Mutant: two empty states merge into a finite sentinel LSE, -1e30, instead of -inf.

Patch: in ``_merge_weights`` (reference/_merge_state_kernel.py) the guard on s writes ``-1e30`` where
both states are empty, not ``-float("inf")``.

Pitfall: the quick fix for the NaN of two empty states is "a very negative number" in place of
-inf, so that every later subtraction stays finite. As the shift of the exponents it is harmless;
returned as the merged LSE it is not: the empty result now claims keys. A consumer that tells an
empty row by s == -inf (a later merge's guard, a backward that skips such rows) takes it for a
real one, and a backward's exp(score - s) overflows to inf there. Merges of states with keys, and
of one empty state, give the same answers as before.

Documented: vllm-project/vllm#39148 (its fix clamps the max to a finite floor, -1e30, with an
epsilon in the denominator); flashinfer-ai/flashinfer#4051 (the union of empty states must stay
(0, -inf)); flashinfer-ai/flashinfer#5262 (a finite shift for the exponent arithmetic only, the
-inf maximum kept, and a finite reduction initializer replaced).

Killed by: ``empty_identity`` on any drawn (token, head) whose state a is empty: merging it with an
empty state meets two empty states, and an expected -inf must be matched exactly. (``agreement``
kills it too, on a drawn pair of empty states; the fuzzer's inputs hold an empty a more often, on
the CPU and the H200 alike.)

Minimal input: one token, one head, D = 3, state a empty (v_a = 0, s_a = -inf), state b (v_b = 1,
s_b = 0). merge(a, b) is b; merge(a, empty) -> expected s = -inf, got -1e30 (v = 0 is right).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "empty_identity"
FUNCTION = "merge_state"
OP = "merge_state"

PATH = "reference/_merge_state_kernel.py"
ANCHOR = 's = tl.where(both_empty, -float("inf"), shift + log_total)'
REPLACEMENT = "s = tl.where(both_empty, -1e30, shift + log_total)"


def minimal_input(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    # State a is empty and b has keys: their merge is b, right with or without the guard; merging a
    # with an empty state (the check's second call) is where two empty states meet.
    v_a = torch.zeros(1, 1, 3, device=device)
    s_a = torch.full((1, 1), -float("inf"), device=device)
    return v_a, s_a, torch.ones(1, 1, 3, device=device), torch.zeros(1, 1, device=device)
