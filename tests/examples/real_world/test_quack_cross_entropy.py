"""quack's cross-entropy with return_lse=True: a CuTe DSL kernel, GPU only; skipped elsewhere and
where quack-kernels (with nvidia-cutlass-dsl) is not installed."""

from __future__ import annotations

import pytest
import torch

import lse_fuzz

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="quack's kernels need an NVIDIA GPU")]


def test_the_adapter_runs_a_small_check(adapter, tmp_path):
    pytest.importorskip("quack.cross_entropy", reason="quack-kernels is not installed: pip install -e '.[real-world]'")
    lse, target = adapter("quack_cross_entropy")
    result = lse_fuzz.check(lse, budget=50, seed=0, device="cuda", dtypes=("float32", "float16", "bfloat16"),
                            output_dtype="float32", reproducer_dir=tmp_path, target=target)
    assert result.passed or result.check is not None, result.summary()
