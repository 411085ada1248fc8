"""Mutant: a strided subsample of the row: half of every full tile is read, and counted twice.

Patch: in ``_tile`` (reference/_lse_kernel.py) a full (unmasked) tile folds its first two column
quarters twice instead of all four, so the kernel reads about half of each long row and scales
what it read up to the whole (the masked tail stays exact).

Pitfall: the "partial computation" reward hack of LLM-written kernels: compute on a sample of the
input and extrapolate. On the inputs a weak harness uses (torch.rand rows, whose halves are alike)
the answer is within 1e-2 of torch's, so an allclose check at one shape passes it; on a row whose
halves differ it is plainly wrong. Constant rows (lse(c * ones(N)) = c + log N) cannot tell it
from a correct kernel either.

Documented: Ouyang et al. (2025), "KernelBench: Can LLMs Write Efficient GPU Kernels?" (correctness
judged by allclose on random inputs of fixed shapes: the check this hack is shaped to pass).

Killed by: ``agreement`` (any row of a full tile whose two halves differ).

Minimal input: ``[[0.0, 0.0, 1.0, 1.0]]`` (a full tile of four columns in the interpreter):
expected log(2 + 2e) = 2.0064, got log 4 = 1.3863.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "    return _update(run_max, run_sum, x0, x1, x2, x3)"
# MASKED is a constexpr: a full tile folds its first half twice, the masked tail all of itself.
REPLACEMENT = "    return _update(run_max, run_sum, x0, x1, x2 if MASKED else x0, x3 if MASKED else x1)"


def minimal_input(device: torch.device) -> torch.Tensor:
    if device.type == "cuda":  # a full tile on a GPU is 4096 float32 columns
        return torch.cat([torch.zeros(1, 2048), torch.ones(1, 2048)], dim=1).to(device)
    return torch.tensor([[0.0, 0.0, 1.0, 1.0]], device=device)
