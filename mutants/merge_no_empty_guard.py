"""Mutant: two empty states are merged with no guard, and -inf - (-inf) = NaN becomes the merged LSE.

Patch: in ``_merge_weights`` (reference/_merge_state_kernel.py) ``both_empty = empty_a & empty_b``
becomes ``both_empty = tl.zeros_like(empty_a)``: the mask of the kernel's three guards (the shift
of 0, the total of 1, s = -inf) is never set, which is the merge formula as written, unguarded.

Pitfall: s = m + log(exp(s_a - m) + exp(s_b - m)) with m = max(s_a, s_b) is the textbook merge,
and it is right for every pair of states that has keys. A (token, head) with no keys on either side
(chunked prefill with an empty context, a fully masked split, a padded slot) has s_a = s_b = -inf:
m is -inf, s_a - m is -inf - (-inf) = NaN, and the NaN becomes the merged LSE (and, in a kernel
that weighs v by it unmasked, v), which the next merge spreads. Ordinary LSEs, and pairs with one
empty side, never reach it.

Documented: vllm-project/vllm#39148 (NaN from the Triton merge_attn_states when both LSEs are
-inf, a zero-length context in chunked prefill; the CUDA kernel returns early on an infinite max);
flashinfer-ai/flashinfer#4051 (merging two empty states returns NaN for v and s, where the union
of empty states must stay (0, -inf)).

Killed by: ``empty_identity`` on any drawn (token, head) whose state a is empty: merging it with an
empty state meets two empty states. (``agreement`` kills it too, on a drawn pair of empty states;
the fuzzer's inputs hold an empty a more often, on the CPU and the H200 alike.)

Minimal input: one token, one head, D = 3, state a empty (v_a = 0, s_a = -inf), state b (v_b = 1,
s_b = 0). merge(a, b) is b, guard or none; merge(a, empty) -> expected (v, s) = (0, -inf), got
s = NaN (v stays 0: ``_merge_weighted`` still drops each empty state's term by its own s).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "empty_identity"
FUNCTION = "merge_state"
OP = "merge_state"

PATH = "reference/_merge_state_kernel.py"
ANCHOR = "both_empty = empty_a & empty_b"
REPLACEMENT = "both_empty = tl.zeros_like(empty_a)"


def minimal_input(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    # State a is empty and b has keys: their merge is b, right with or without the guard; merging a
    # with an empty state (the check's second call) is where two empty states meet.
    v_a = torch.zeros(1, 1, 3, device=device)
    s_a = torch.full((1, 1), -float("inf"), device=device)
    return v_a, s_a, torch.ones(1, 1, 3, device=device), torch.zeros(1, 1, device=device)
