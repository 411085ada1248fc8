"""Mutant: the output store's row guard is ``rows <= M``: one element past the output is written.

Patch: in ``_lse_kernel`` (reference/_lse_kernel.py) the store of the results,
``tl.store(out_ptr + rows, ..., mask=rows < M)``, is masked with ``rows <= M``: the program whose
row block holds row M stores a value (row M - 1's, through the clamped row index) one element past
the end of the output.

Pitfall: ``<`` versus ``<=`` in a guard. Every result is right; the extra element overwrites
whatever follows the output: another tensor's first element, an allocator's bookkeeping, or
nothing that anyone reads, which is why it ships. On a GPU nothing reports it unless the output
ends at an allocation's end and a memory checker watches.

Documented: MITRE CWE-193 (off-by-one error) and CWE-787 (out-of-bounds write);
triton-lang/triton#1765 (masked stores with an off-by-one mask corrupting a neighbouring buffer).

Killed by: ``memory_bounds``: on the CPU the bounds checker stops the store of out[M]; on a GPU
the memory phase's compute-sanitizer memcheck sees it past the allocation (the caching allocator
off). Only when M is not a multiple of the row block (else no program holds row M).

Minimal input: three rows of four ones -> the right answers, 1 + log 4 = 2.3863, and a store to
out[3], one element past the end of a 3-element output.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "memory_bounds"

PATH = "reference/_lse_kernel.py"
ANCHOR = "tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows < M)"
REPLACEMENT = "tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows <= M)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.ones(3, 4, device=device)
