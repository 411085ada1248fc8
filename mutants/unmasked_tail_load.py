"""Mutant: the tail tile is loaded whole and its lanes past the row are discarded with tl.where.

Patch: in ``_load`` (reference/_lse_kernel.py) the masked load of the tail tile,
``tl.load(ptrs, mask=cols < col_end, other=-inf)``, becomes ``tl.where(cols < col_end,
tl.load(ptrs), -inf)``: the same values, but every lane is read, the ones past the row included.

Pitfall: "mask it afterwards" reads like the masked load and returns the same numbers; the lanes
past the row read the next row (harmless) or, for the last row, memory past the tensor. On a GPU
that read lands in the caching allocator's slack and nothing is seen, until the tensor ends at a
page nobody mapped (an illegal address) or a neighbour's data holds a signalling pattern. Every
value check passes it.

Documented: triton-lang/triton#10336 (loads whose lanes exceed the view read past its storage);
the Triton tutorials' "mask=..., other=..." idiom, which exists because the unmasked load is out
of bounds.

Killed by: ``memory_bounds``: on the CPU the bounds checker stops the last row's read past the
end of the view; on a GPU the memory phase's compute-sanitizer memcheck sees it past the
allocation (the caching allocator off).

Minimal input: one row of three zeros -> the right answer, log 3 = 1.0986, and a read of
x[3], one element past the end of a 3-element tensor (a tail tile is four lanes wide or more).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "memory_bounds"

PATH = "reference/_lse_kernel.py"
ANCHOR = 'x = tl.load(ptrs, mask=(cols < col_end)[None, :], other=-float("inf"))'
REPLACEMENT = 'x = tl.where((cols < col_end)[None, :], tl.load(ptrs), -float("inf"))'


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.zeros(1, 3, device=device)
