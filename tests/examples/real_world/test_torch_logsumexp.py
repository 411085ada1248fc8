"""torch.logsumexp, eager: the adapter passes a small check, and its float16 overflow (docs/bugs-found.md)
is reproduced against numpy's float64 answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import lse_fuzz


def test_the_adapter_passes_a_small_check(adapter, tmp_path):
    lse, target = adapter("torch_logsumexp")
    result = lse_fuzz.check(lse, budget=30, seed=0, device="cpu", reproducer_dir=tmp_path, target=target, max_n=65504)
    assert result.passed, result.summary()


def test_the_fuzzer_finds_the_float16_overflow_in_wide_rows(adapter, tmp_path):
    # One wide constant float16 row is enough; the default CPU element cap (65536) keeps such rows
    # out of a default run on a CPU, so the cap is raised as the docs say.
    lse, target = adapter("torch_logsumexp")
    result = lse_fuzz.check(lse, budget=120, seed=0, device="cpu", dtypes="float16", max_elements=300_000,
                            reproducer_dir=tmp_path, target=target)
    assert result.check == "agreement", result.summary()
    assert result.counterexample.x.shape[1] >= 65520


@pytest.mark.slow
@pytest.mark.parametrize("columns", [65520, 65536, 131072])
def test_float16_rows_of_65520_or_more_equal_values_give_inf(columns):
    x = torch.zeros(1, columns, dtype=torch.float16)
    exact = float(np.log(np.exp(x.double().numpy()).sum(axis=1))[0])   # independent float64: log N
    assert exact == pytest.approx(math.log(columns))
    assert math.isfinite(exact) and exact < 65504
    assert torch.isinf(torch.logsumexp(x, dim=-1)).all()           # the bug: the sum is stored in float16
    assert torch.logsumexp(x.float(), dim=-1).item() == pytest.approx(exact, rel=1e-6)   # float32 is right
