"""flash-linear-attention's fused cross-entropy: the adapter passes a small check (the LSE recovered
from the per-row loss), and an all -inf chunk of a finite row gives NaN, as in logsumexp_fwd
(docs/bugs-found.md), checked against numpy in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import lse_fuzz

fused_cross_entropy = pytest.importorskip("fla.modules.fused_cross_entropy",
                                          reason="flash-linear-attention is not installed: pip install -e '.[real-world]'")

CONTRACT = {"contract": "finite", "dtypes": ("float32", "float16", "bfloat16"), "output_dtype": "float32"}


def test_the_adapter_passes_a_small_check(adapter, tmp_path):
    lse, target = adapter("fla_cross_entropy")
    result = lse_fuzz.check(lse, budget=20, seed=0, device="cpu", reproducer_dir=tmp_path, target=target, **CONTRACT)
    assert result.passed, result.summary()


@pytest.mark.slow
def test_a_chunk_of_all_neg_inf_gives_nan_for_a_finite_row():
    columns = 65536 + 8   # two chunks of BV = 65536; the first holds only -inf
    x = torch.full((1, columns), -math.inf)
    x[0, 65536:] = torch.arange(8, dtype=torch.float32)
    target = torch.tensor([columns - 1])
    values = x.double().numpy()
    exact = float(values.max() + np.log(np.exp(values - values.max()).sum()) - values[0, -1])
    assert exact == pytest.approx(0.4583396, abs=1e-6)
    assert torch.nn.functional.cross_entropy(x, target, reduction="none").item() == pytest.approx(exact, abs=1e-5)
    loss, _ = fused_cross_entropy.cross_entropy_loss(x, target)
    assert torch.isnan(loss).all()
