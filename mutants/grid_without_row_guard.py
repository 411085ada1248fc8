"""Mutant: the rows past M in the last row block are loaded: no clamp, no mask.

Patch: in ``_lse_kernel`` (reference/_lse_kernel.py) ``safe_rows = tl.minimum(rows, M - 1)``
becomes ``safe_rows = rows``: the programs of the last row block, rounded up to BLOCK_M rows,
load rows M, M + 1, ... of the input, which do not exist; their results are never stored.

Pitfall: a grid rounded up to whole blocks needs a guard on every access of the rows it adds; the
store has one (``mask=rows < M``), so every value is right, and the loads have none. On a GPU the
reads land past the tensor, in the caching allocator's slack, and nothing is seen until the
tensor ends at unmapped memory. Tests with M a multiple of the block never run the extra rows.

Documented: the Triton tutorials' fused softmax (each program guards its row: "row_idx <
n_rows"); pytorch/pytorch#98929 and #112340 (Inductor kernels reading past their rows,
reported by compute-sanitizer).

Killed by: ``memory_bounds``: on the CPU the bounds checker stops the read of row M; on a GPU the
memory phase's compute-sanitizer memcheck sees it past the allocation (the caching allocator off).

Minimal input: three rows of four ones -> the right answers, 1 + log 4 = 2.3863, and a read of
row 3 of a 3-row tensor (a row block holds a power of two of rows, four or more here).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "memory_bounds"

PATH = "reference/_lse_kernel.py"
ANCHOR = "safe_rows = tl.minimum(rows, M - 1)"
REPLACEMENT = "safe_rows = rows"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.ones(3, 4, device=device)
