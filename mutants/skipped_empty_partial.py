"""Mutant: a split whose values are all -inf does not store its partial max; the combine reads it anyway.

Patch: in ``_lse_kernel`` (reference/_lse_kernel.py) the store of a split's partial max is masked
with ``run_max > -inf`` as well as ``rows < M``: an empty split ("nothing to merge") leaves its
slot of the ``torch.empty`` partials buffer as the allocator left it, and the combine kernel reads
every slot.

Pitfall: skipping the work of an empty partial is a natural optimisation, and it looks safe: the
partial's sum, 0, is still stored, so any finite value left in the max slot gives the right answer
(m + log 0 = -inf for an all -inf row, and a zero-weight term otherwise). On a fresh page the slot
holds zeros; the bug shows only when the allocator hands back memory holding an infinity or a NaN,
in some other process's run.

Documented: vllm-project/vllm#39148 and flashinfer-ai/flashinfer#4051 (merges of empty attention
states reading values nobody wrote or defined); NVIDIA compute-sanitizer's initcheck, the tool that
names such reads.

Killed by: ``uninitialized_read``: on the CPU the tracking of the call's ``torch.empty``
allocations stops the combine's read of the skipped slot; on a GPU the memory phase's
compute-sanitizer initcheck reports it. Only rows that the launch policy splits (in the
interpreter, 769 columns and more) with a split of all -inf values.

Minimal input: one row of 1024 -inf (split in the interpreter into two partials, both empty) ->
the right answer, -inf, and a read of a partial max nothing wrote.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "uninitialized_read"

PATH = "reference/_lse_kernel.py"
ANCHOR = "tl.store(part_max_ptr + part, run_max, mask=rows < M)"
REPLACEMENT = 'tl.store(part_max_ptr + part, run_max, mask=(rows < M) & (run_max > -float("inf")))'


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.full((1, 1024), -float("inf"), device=device)
