"""Mutant: an input with no columns returns shape (0,) instead of M values of -inf.

Bug: the launcher's early return for empty inputs tests ``x.numel() == 0`` and returns
``torch.empty(0)``: right for M = 0, wrong for an (M, 0) input, whose answer is M rows of -inf
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

from reference._device import check_device
from reference._lse_kernel import _lse_kernel
from reference.oracle import validate_input

from ._launch import kernel_device, launch_config, output_dtype, run_kernels


def lse(x: torch.Tensor) -> torch.Tensor:
    validate_input(x)
    check_device(x)
    # BUG: "no elements, nothing to do": an (M, 0) input needs M results of -inf, not none.
    if x.numel() == 0:
        return torch.empty(0, dtype=output_dtype(x), device=x.device)
    return run_kernels(x, launch_config(x), _lse_kernel)


def minimal_input() -> torch.Tensor:
    return torch.empty(1, 0).to(kernel_device())
