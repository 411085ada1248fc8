"""torch.logsumexp under torch.compile: the adapter passes a check (Inductor compiles per dtype and
layout class: tens of seconds on a CPU, hence the slow tier), and does not share eager's float16 overflow."""

from __future__ import annotations

import math

import pytest
import torch

import lse_fuzz


@pytest.mark.slow
def test_the_adapter_passes_a_small_check(adapter, tmp_path):
    lse, target = adapter("torch_compile_logsumexp")
    result = lse_fuzz.check(lse, budget=20, seed=0, device="cpu", reproducer_dir=tmp_path, target=target)
    assert result.passed, result.summary()


@pytest.mark.slow
def test_compiled_float16_wide_rows_stay_finite(adapter):
    lse, _ = adapter("torch_compile_logsumexp")
    out = lse(torch.zeros(1, 65520, dtype=torch.float16))
    assert out.item() == pytest.approx(math.log(65520), abs=8e-3)   # half an ulp of float16 at 11.09
