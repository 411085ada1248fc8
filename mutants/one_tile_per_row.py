"""Mutant: long rows silently truncated to one tile.

Patch: ``full_tiles = 0`` in ``_lse_kernel`` (reference/_lse_kernel.py): the loop over tiles never
runs, and the masked tail load, now placed at the start of the column range, is the only tile
read: the first BLOCK_N columns of each range, which is the whole row only while the launch
policy's tile covers it.

Pitfall: the Triton softmax tutorial loads a whole row as one masked tile (BLOCK_SIZE =
next_power_of_2(n_cols)). That stops compiling, or spills registers, for long rows, so launchers
cap the tile width; a kernel without a loop then reads the first BLOCK_N columns and nothing
warns. Vocabulary-sized rows (32k to 256k columns) are exactly where LSE runs.

Documented: Triton tutorial 02-fused-softmax (one tile per row, "the row does not fit" caveat);
the reference launch policy (reference/_launch.py) caps tiles at 4096 columns on a GPU.

Killed by: ``agreement`` on rows longer than one tile (257 columns and more in the interpreter,
4097 and more on a GPU); ``permutation_invariance`` also catches it (the answer depends on which
entries sit in the first tile).

Minimal input: in the interpreter, one row of 257 columns, zeros except x[0, 256] = 10 -> expected
10.0 + log(1 + 256 e^-10) = 10.0116, got log 256 = 5.5452 (column 256 never read). On a GPU, 264
rows (two waves of an H200's 132 multiprocessors, so the policy does not split them) of 4097
columns.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "full_tiles = (col_end - col_begin) // BLOCK_N"
REPLACEMENT = "full_tiles = 0"


def minimal_input(device: torch.device) -> torch.Tensor:
    rows, cols = (1, 257) if device.type == "cpu" else (264, 4097)
    x = torch.zeros(rows, cols, device=device)
    x[:, -1] = 10.0
    return x
