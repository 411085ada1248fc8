"""Unsloth's fast cross-entropy: the adapter runs a small check. Skipped where unsloth is not
installed. Its kernels call a module-level alias of `tl.cast` (`triton_cast`), which the CPU runs
as Triton's compiler reads it (fuzz.interpreter.kernel_globals); before, it was an ERROR on the CPU only."""

from __future__ import annotations

import importlib.util

import pytest

import lse_fuzz

pytestmark = pytest.mark.skipif(importlib.util.find_spec("unsloth") is None,
                                reason="unsloth is not installed (see examples/real_world/README.md)")

CONTRACT = {"contract": "finite", "dtypes": ("float32", "float16", "bfloat16"), "output_dtype": "float32"}


def test_the_adapter_passes_a_small_check(adapter, tmp_path):
    lse, target = adapter("unsloth_cross_entropy")
    result = lse_fuzz.check(lse, budget=25, seed=0, device="cpu", reproducer_dir=tmp_path, target=target, **CONTRACT)
    assert result.passed, result.summary()
