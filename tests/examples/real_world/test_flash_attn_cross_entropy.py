"""flash-attn's Triton cross-entropy: the adapter passes a small check, and both bugs of
docs/bugs-found.md are reproduced: the kernel that Triton's own compiler refuses for a row stride of
1, and NaN for a finite loss, checked against numpy in float64. Skipped where flash-attn is not
installed (its source distribution, without the CUDA build: see the adapter's docstring)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import os
import subprocess
import sys
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


# Compiled by Triton's own compiler in a process of its own: here Triton's interpreter is on
# (TRITON_INTERPRET=1), and in Triton 3.9 its stand-ins for tl.max and the like stay patched into
# the language, which a real compile then trips on. The kernel's file is loaded by its path:
# flash_attn's package imports its CUDA extension, absent from a build without it.
_COMPILE = """
import importlib.util, pathlib
from triton import compile as triton_compile
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError
from triton.runtime.jit import JITFunction
package = pathlib.Path(importlib.util.find_spec("flash_attn").submodule_search_locations[0])
path = package / "ops" / "triton" / "cross_entropy.py"
spec = importlib.util.spec_from_file_location("flash_attn_cross_entropy_file", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
kernel = module.cross_entropy_fwd_kernel
while not isinstance(kernel, JITFunction):  # under its heuristics decorator
    kernel = kernel.fn
names = list(kernel.arg_names)
types = dict.fromkeys(names[:5], "*fp32") | {"labels_ptr": "*i64"}
types |= dict.fromkeys(["smoothing", "logit_scale", "lse_square_scale"], "fp32")
types |= dict.fromkeys(["ignore_index", "total_classes", "class_start_idx", "n_cols", "logits_row_stride"], "i32")
constants = {"BLOCK_SIZE": 2, "HAS_SMOOTHING": False, "SPLIT": False, "PRECOMPUTED_LSE": False}

def compile_with(extra):
    known, given = constants | extra, types | dict.fromkeys([*constants, *extra], "constexpr")
    # In the kernel's argument order: Triton 3.9 reads the signature's types by position.
    source = ASTSource(kernel, {name: given[name] for name in names}, {(names.index(n),): v for n, v in known.items()})
    return triton_compile(source, target=GPUTarget("cuda", 90, 32))

print("stride 2:", "compiled" if compile_with({}) is not None else "nothing")
try:
    compile_with({"logits_row_stride": 1})
    print("stride 1: compiled")
except CompilationError as exc:
    print("stride 1:", str(exc).strip().splitlines()[-1])
"""


@pytest.mark.slow
def test_the_kernel_does_not_compile_for_a_row_stride_of_1():
    # Triton's launcher makes an int argument equal to 1 a constexpr; the kernel then calls
    # logits_row_stride.to(tl.int64) on a Python int. Compiled for an H100-class target with
    # Triton's own compiler (its front end needs no GPU), once with row stride 2 and once with 1.
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _COMPILE], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "stride 2: compiled" in lines, done.stdout
    refused = [line for line in lines if line.startswith("stride 1:")]
    assert refused and "'int' object has no attribute 'to'" in refused[0], done.stdout


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
