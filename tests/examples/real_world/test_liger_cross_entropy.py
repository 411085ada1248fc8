"""Liger-Kernel's cross-entropy: the adapter passes a small check, and the two bugs of
docs/bugs-found.md are reproduced, each against an independent float64 computation (numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import lse_fuzz

liger_functional = pytest.importorskip("liger_kernel.transformers.functional",
                                       reason="liger-kernel is not installed: pip install -e '.[real-world]'")

CONTRACT = {"contract": "finite", "dtypes": ("float32", "float16", "bfloat16"), "output_dtype": "input"}


def test_the_adapter_passes_a_small_check(adapter, tmp_path):
    lse, target = adapter("liger_cross_entropy")
    result = lse_fuzz.check(lse, budget=25, seed=0, device="cpu", reproducer_dir=tmp_path, target=target, **CONTRACT)
    assert result.passed, result.summary()


def _float64_cross_entropy(x: torch.Tensor, target: torch.Tensor) -> np.ndarray:
    """lse_i - x[i, target_i] in float64 with numpy, -inf logits included (exp(-inf) = 0)."""
    values = x.double().numpy()
    row_max = values.max(axis=1, keepdims=True)
    lse = row_max[:, 0] + np.log(np.exp(values - row_max).sum(axis=1))
    return lse - values[np.arange(len(values)), target.numpy()]


@pytest.mark.slow
def test_a_row_whose_first_block_is_all_neg_inf_gives_nan():
    # Liger's block is min(32768, next_pow2(V)) columns; the first one holds only -inf (masked logits),
    # the rest are finite and the target is finite: a well-defined loss.
    columns = 32768 + 8
    x = torch.full((1, columns), -math.inf)
    x[0, 32768:] = torch.arange(8, dtype=torch.float32)
    target = torch.tensor([columns - 1])
    exact = _float64_cross_entropy(x, target)
    assert np.isfinite(exact).all() and exact[0] == pytest.approx(0.4583396, abs=1e-6)
    assert torch.nn.functional.cross_entropy(x, target, reduction="none").item() == pytest.approx(exact[0], abs=1e-5)
    got = liger_functional.liger_cross_entropy(x, target, reduction="none")
    assert torch.isnan(got).all()   # the bug: (m - m_new) * LOG2_E is -inf - (-inf) = NaN in the first block


@pytest.mark.slow
def test_an_empty_batch_raises():
    x = torch.empty(0, 8)
    target = torch.empty(0, dtype=torch.int64)
    assert torch.nn.functional.cross_entropy(x, target, reduction="none").shape == (0,)   # torch: empty loss
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        liger_functional.liger_cross_entropy(x, target, reduction="none")
