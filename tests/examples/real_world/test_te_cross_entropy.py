"""TransformerEngine's Triton cross-entropy: the fuzzer finds the int32 overflow of its column
offsets from the adapter, and both bugs of docs/bugs-found.md are reproduced against an independent
float64 computation (numpy). Skipped where transformer_engine is not on the path (it is installed
apart: see the adapter's docstring)."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
import torch

import lse_fuzz

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformer_engine") is None,
                                reason="transformer-engine is not installed: pip install --no-deps --target DIR "
                                       "transformer-engine==2.20.2, with DIR on PYTHONPATH")

CONTRACT = {"contract": "finite", "dtypes": ("float32", "bfloat16"), "output_dtype": "float32"}


@pytest.fixture
def te_cross_entropy(adapter):
    """TE's launcher module, as the adapter imports it."""
    lse, target = adapter("te_cross_entropy")
    return importlib.import_module(lse.__module__).te_triton_cross_entropy


def _float64_cross_entropy(x: torch.Tensor, target: torch.Tensor) -> np.ndarray:
    """lse_i - x[i, target_i] in float64 with numpy, -inf logits included (exp(-inf) = 0)."""
    values = x.double().numpy()
    row_max = values.max(axis=1, keepdims=True)
    lse = row_max[:, 0] + np.log(np.exp(values - row_max).sum(axis=1))
    return lse - values[np.arange(len(values)), target.numpy()]


def _loss(te_cross_entropy, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return te_cross_entropy.cross_entropy_forward(x[None], target[None], 0.0, False, None, -100, False)[0][0]


def test_the_fuzzer_finds_the_int32_overflow_of_column_offsets(adapter, tmp_path):
    lse, target = adapter("te_cross_entropy")
    result = lse_fuzz.check(lse, budget=100, seed=0, device="cpu", reproducer_dir=tmp_path, target=target, **CONTRACT)
    assert not result.passed, result.summary()
    x = result.counterexample.x
    assert x.stride(1) * (x.shape[1] - 1) >= 2**31   # a column offset past int32
    # The CPU stops the wrapped read itself, before any value is judged: 2**31 elements before the row.
    assert result.check == "memory_bounds", result.summary()
    assert "elements before the start of a" in result.summary() and "cross_entropy_forward_kernel" in result.summary()


def test_the_adapter_passes_a_small_check_without_huge_offsets(adapter, tmp_path):
    lse, target = adapter("te_cross_entropy")
    result = lse_fuzz.check(lse, budget=25, seed=0, device="cpu", huge_offsets=False, reproducer_dir=tmp_path,
                            target=target, **CONTRACT)
    assert result.passed, result.summary()


@pytest.mark.slow
def test_a_column_offset_past_int32_reads_the_wrong_logit(te_cross_entropy):
    # One row of 3 logits with column stride 2**30, 2**31 elements into a zeroed bfloat16 storage (its
    # untouched pages are never backed): the third logit's offset 2 * 2**30 wraps to -2**31, which
    # lands on element 0 of the storage, a 0.
    stride = 2**30
    storage = torch.zeros(2**31 + 2 * stride + 1, dtype=torch.bfloat16)
    x = storage.as_strided((1, 3), (1, stride), 2**31)
    x[0] = torch.tensor([0.0, 1.0, 2.0])
    target = torch.tensor([2])
    exact = _float64_cross_entropy(x, target)
    assert exact[0] == pytest.approx(0.4076060, abs=1e-6)
    assert torch.nn.functional.cross_entropy(x.float(), target, reduction="none").item() == pytest.approx(exact[0], abs=1e-5)
    got = _loss(te_cross_entropy, x, target)
    assert got.item() == pytest.approx(math.log(2 + math.e) - 2, abs=1e-5)   # the bug: read as [0, 1, 0]; a negative loss


@pytest.mark.slow
def test_a_row_whose_first_block_is_all_neg_inf_gives_nan(te_cross_entropy):
    # TE's block is min(32768, next_pow2(V)) columns; the first holds only -inf, the target is finite.
    columns = 32768 + 8
    x = torch.full((1, columns), -math.inf)
    x[0, 32768:] = torch.arange(8, dtype=torch.float32)
    target = torch.tensor([columns - 1])
    exact = _float64_cross_entropy(x, target)
    assert exact[0] == pytest.approx(0.4583396, abs=1e-6)
    assert torch.nn.functional.cross_entropy(x, target, reduction="none").item() == pytest.approx(exact[0], abs=1e-5)
    assert torch.isnan(_loss(te_cross_entropy, x, target)).all()   # the bug: exp(m - m_new) is exp(-inf + inf)
