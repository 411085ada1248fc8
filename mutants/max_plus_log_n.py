"""Mutant: returns max + log N, exact on constant rows and wrong on every other.

Patch: in ``_lse_kernel`` (reference/_lse_kernel.py) the finished row uses N in place of its sum,
``_finish(run_max, 0.0 * run_sum + N)``: m + log N, with NaN rows still NaN (split rows, combined
by another kernel, are unaffected).

Pitfall: the upper bound of the LSE, max + log N, is what a kernel returns when it assumes the
exponentials of a row all equal exp(0); the identity lse(c * ones(N)) = c + log N then holds for
every constant row, so a harness that builds its inputs with torch.full or torch.ones (or checks the
identity alone) accepts it.

Documented: Blanchard, Higham and Higham (2021), "Accurately computing the log-sum-exp and
softmax functions", IMA J. Numer. Anal. 41(4), section 1 (the bounds of the LSE).

Killed by: ``agreement`` (a row whose entries differ; a +inf row gives NaN instead of +inf).

Minimal input: ``[[0.0, -10.0]]`` -> expected 4.54e-05, got log 2 = 0.6931.
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = "        tl.store(out_ptr + rows, _finish(run_max, run_sum), mask=rows < M)"
REPLACEMENT = "        tl.store(out_ptr + rows, _finish(run_max, 0.0 * run_sum + N), mask=rows < M)"


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[0.0, -10.0]], device=device)
