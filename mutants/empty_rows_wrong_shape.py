"""Mutant: an input with no columns returns shape (0,) instead of M values of -inf.

Patch: the launcher's early return for empty inputs (``lse`` in reference/_lse_kernel.py) returns
``torch.empty(0, ...)``: right for M = 0, wrong for an (M, 0) input, whose answer is M rows of -inf
(each row is an empty sum: log 0 = -inf).

Pitfall: "nothing to do" guards are written for the empty batch and then also catch the empty
row. A reduction over an empty axis still has one result per remaining index; the kernel is never
launched, so no kernel test sees this launcher path.

Documented: pydata/numexpr#229 (sum returns the wrong shape for arrays with a zero dimension);
scipy/scipy#20399 (logsumexp of an empty array is -inf); pytorch/pytorch#9825 (logsumexp on
empty tensors).

Killed by: ``output_contract`` (shape (0,), expected (M,)), which runs first; ``agreement`` too
when run alone.

Minimal input: ``torch.empty(1, 0)`` -> expected ``[-inf]`` (shape (1,)), got shape (0,).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "output_contract"

PATH = "reference/_lse_kernel.py"
ANCHOR = "torch.full((rows,), -math.inf, dtype=out_dtype, device=x.device)"
REPLACEMENT = "torch.empty(0, dtype=out_dtype, device=x.device)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.empty(1, 0, device=device)
