"""Mutant: the tail mask is ``cols <= col_end``: one element past the end of the row is read.

Patch: in ``_load`` (reference/_lse_kernel.py) the tail tile's mask ``cols < col_end`` becomes
``cols <= col_end``; the lane at column N (one past the last) is loaded and counted.

Pitfall: ``<`` versus ``<=`` in a bounds mask. The extra lane reads whatever follows the row in
memory: the next row's first element, padding, or (for the last row) bytes past the allocation,
which is an out-of-bounds read a GPU does not always report. Rows whose length is a multiple of
the tile width have no tail and hide the bug.

Documented: triton-lang/triton#10336 (masked loads whose logical length exceeds the view read past
its storage); MITRE CWE-193 (off-by-one error).

Killed by: ``memory_bounds``: on the CPU the bounds checker sees the read itself first (the last
row's extra lane lies past the end of the view); on a GPU ``agreement`` fails first, on padded
layouts (the fuzzer's padding is NaN, so the row comes out NaN) and on contiguous ones (the next
row's first element is counted), and the memory phase's compute-sanitizer memcheck then names the
read past the allocation.

Minimal input: ``[[0., 0., 0., 100.]][:, :3]`` (one row of three zeros, padding 100 after it) ->
expected log 3 = 1.0986, got 100.0 (the padding).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "memory_bounds"

PATH = "reference/_lse_kernel.py"
ANCHOR = "(cols < col_end)"
REPLACEMENT = "(cols <= col_end)"


def minimal_input(device: torch.device) -> torch.Tensor:
    # Sliced on the device: a non-dense view moved to another device would lose its padding.
    return torch.tensor([[0.0, 0.0, 0.0, 100.0]], device=device)[:, :3]
