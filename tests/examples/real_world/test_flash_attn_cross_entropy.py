"""flash-attn's Triton cross-entropy: the adapter passes a small check, and both bugs of
docs/bugs-found.md are reproduced: the kernel that Triton's own compiler refuses for a row stride of
1, and NaN for a finite loss, checked against numpy in float64. Skipped where flash-attn is not
installed (its source distribution, without the CUDA build: see the adapter's docstring)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
from unittest import mock

import numpy as np
import pytest
import torch

import lse_fuzz

pytestmark = pytest.mark.skipif(importlib.util.find_spec("flash_attn") is None,
                                reason="flash-attn is not installed: FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE "
                                       "FLASH_ATTENTION_FORCE_BUILD=TRUE pip install --no-deps --no-build-isolation "
                                       "flash-attn==2.8.3.post2")

CONTRACT = {"contract": "finite", "dtypes": ("float32", "float16", "bfloat16"), "output_dtype": "float32"}


@pytest.fixture
def flash_attn_cross_entropy(adapter):
    """flash-attn's Triton cross-entropy module, as the adapter imports it."""
    lse, target = adapter("flash_attn_cross_entropy")
    return importlib.import_module(lse.__module__).flash_attn_cross_entropy


def test_the_adapter_passes_a_small_check(adapter, tmp_path):
    lse, target = adapter("flash_attn_cross_entropy")
    result = lse_fuzz.check(lse, budget=25, seed=0, device="cpu", reproducer_dir=tmp_path, target=target, **CONTRACT)
    assert result.passed, result.summary()


@pytest.mark.slow
def test_the_kernel_does_not_compile_for_a_row_stride_of_1(flash_attn_cross_entropy):
    # Triton's launcher makes an int argument equal to 1 a constexpr; the kernel then calls
    # logits_row_stride.to(tl.int64) on a Python int. Compiled here for an H100-class target with
    # Triton's own compiler (its front end needs no GPU), once with row stride 2 and once with 1.
    from triton import compile as triton_compile
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError
    from triton.runtime.jit import JITFunction

    heuristics = flash_attn_cross_entropy.cross_entropy_fwd_kernel
    # The compiled kernel of the same Python function (on a CPU, Triton's interpreter made it an
    # InterpretedFunction, which does not compile).
    kernel = JITFunction(heuristics.fn.fn)
    names = list(kernel.arg_names)
    signature = dict.fromkeys(names[:5], "*fp32") | {"labels_ptr": "*i64"}
    signature |= dict.fromkeys(["smoothing", "logit_scale", "lse_square_scale"], "fp32")
    signature |= dict.fromkeys(["ignore_index", "total_classes", "class_start_idx", "n_cols", "logits_row_stride"], "i32")
    constants = {"BLOCK_SIZE": 2, "HAS_SMOOTHING": False, "SPLIT": False, "PRECOMPUTED_LSE": False}
    signature |= dict.fromkeys(constants, "constexpr")

    def compile_with(extra_constants: dict):
        known = constants | extra_constants
        source = ASTSource(kernel, signature | dict.fromkeys(extra_constants, "constexpr"),
                           {(names.index(name),): value for name, value in known.items()})
        return triton_compile(source, target=GPUTarget("cuda", 90, 32))

    assert compile_with({}) is not None
    with pytest.raises(CompilationError, match="'int' object has no attribute 'to'"):
        compile_with({"logits_row_stride": 1})


@pytest.mark.slow
def test_a_row_whose_first_block_is_all_neg_inf_gives_nan(flash_attn_cross_entropy):
    # flash-attn's block is min(16384, next_pow2(V)) columns; the first holds only -inf.
    columns = 16384 + 8
    x = torch.full((1, columns), -math.inf)
    x[0, 16384:] = torch.arange(8, dtype=torch.float32)
    target = torch.tensor([columns - 1])
    values = x.double().numpy()
    exact = float(values.max() + np.log(np.exp(values - values.max()).sum()) - values[0, -1])
    assert exact == pytest.approx(0.4583396, abs=1e-6)
    assert torch.nn.functional.cross_entropy(x, target, reduction="none").item() == pytest.approx(exact, abs=1e-5)
    with mock.patch.object(torch.cuda, "device", contextlib.nullcontext):   # the launcher's GPU guard, on a CPU
        loss, _ = flash_attn_cross_entropy.cross_entropy_loss(x, target)
    assert torch.isnan(loss).all()   # the bug: exp(m_i - m_i_new) is exp(-inf + inf)
