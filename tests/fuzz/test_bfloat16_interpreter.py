"""fuzz.bfloat16_interpreter: bfloat16 arithmetic in Triton's interpreter gives what a GPU gives.

The expected values are torch's own bfloat16 arithmetic on the CPU (float32 compute, one
round-to-nearest-even), the semantics of a GPU's bfloat16 instructions. Without the module the
same kernels read bit patterns: the last tests show it, in a fresh process, so that a Triton
release that fixes its interpreter fails here (then the module can go).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import fuzz
from fuzz import bfloat16_interpreter
from fuzz.bfloat16_interpreter import to_bits, to_float32
from fuzz.target import load_target
from reference._device import interpreting

import triton  # noqa: E402  (after reference: the interpreter is on where no GPU is)
import triton.language as tl  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NATIVE_MAX = ROOT / "tests" / "implementations" / "correct" / "native_dtype_max.py"
needs_interpreter = pytest.mark.skipif(not interpreting(), reason="Triton's interpreter only (no GPU here)")


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().view(torch.int16).numpy().view(np.uint16)


def test_widening_is_exact_for_every_bfloat16_bit_pattern():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    expected = torch.from_numpy(every.view(np.int16)).view(torch.bfloat16).float().numpy()
    widened = to_float32(every)
    assert np.array_equal(widened, expected, equal_nan=True)
    finite = ~np.isnan(widened)
    assert np.array_equal(to_bits(widened)[finite], every[finite])  # and back, unchanged
    assert np.isnan(to_float32(to_bits(widened[~finite]))).all()


def test_narrowing_rounds_to_nearest_even_as_torch_does():
    rng = np.random.default_rng(0)
    values = np.concatenate([
        rng.standard_normal(20000).astype(np.float32) * np.float32(1e3),
        rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32),  # any bits
        np.array([3.3895314e38, 3.4028235e38, 1e-40, -1e-45, 1.00390625, 1.01171875, -0.0, np.inf, -np.inf],
                 dtype=np.float32),  # largest bf16, overflow, subnormals, exact halfway cases
    ])
    finite = ~np.isnan(values)
    expected = _bits(torch.from_numpy(values[finite]).to(torch.bfloat16))
    assert np.array_equal(to_bits(values[finite]), expected)
    assert np.isnan(to_float32(to_bits(values[~finite]))).all()


@triton.jit
def _elementwise(a_ptr, b_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    cols = tl.arange(0, N)
    a = tl.load(a_ptr + cols)
    b = tl.load(b_ptr + cols)
    if OP == "sub":
        r = a - b
    elif OP == "add_mul":
        r = a * b + a
    elif OP == "neg":
        r = -a
    elif OP == "maximum":
        r = tl.maximum(a, b)
    elif OP == "select_gt":
        r = tl.where(a > b, a, b)
    elif OP == "fma":
        r = tl.fma(a, b, a)
    elif OP == "clamp":
        r = tl.clamp(a, b, b + 1.0)
    elif OP == "sum":
        r = tl.sum(a, axis=0) + tl.zeros_like(a)
    else:
        r = tl.cumsum(a, axis=0)
    tl.store(out_ptr + cols, r)


def _expected(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    bf = torch.bfloat16
    widen = lambda t: t.double()  # noqa: E731
    return {
        "sub": a - b,
        "add_mul": a * b + a,
        "neg": -a,
        "maximum": torch.maximum(a, b),
        "select_gt": torch.where(a > b, a, b),
        "fma": (widen(a) * widen(b) + widen(a)).to(bf),
        "clamp": torch.minimum(torch.maximum(a, b), b + 1.0),
        "sum": _tree_sum(a).expand(a.shape),
        "cumsum": a.float().cumsum(0).to(bf),
    }[op]


def _tree_sum(a: torch.Tensor) -> torch.Tensor:
    """Pairwise sums in torch's bfloat16 arithmetic, level by level (len(a) a power of two)."""
    while a.numel() > 1:
        a = a[0::2] + a[1::2]
    return a[0]


def test_a_bfloat16_sum_rounds_its_partial_sums():
    # 1 + 2**-9 is halfway between two bfloat16 values and rounds to even, 1.0: so does each partial
    # sum holding it. Added in float32 and rounded once, the same four values give 1 + 2**-8.
    bits = _bits(torch.tensor([1.0, 2.0**-9, 2.0**-9, 0.0], dtype=torch.bfloat16))
    assert to_float32(bfloat16_interpreter.tree_sum(bits, 0, False)) == 1.0
    assert to_float32(bfloat16_interpreter.tree_sum(bits[:3], None, True)).shape == (1,)
    rows = _bits(torch.arange(12, dtype=torch.bfloat16).reshape(3, 4))
    assert to_float32(bfloat16_interpreter.tree_sum(rows, 1, True)).tolist() == [[6.0], [22.0], [38.0]]


OPS = ["sub", "add_mul", "neg", "maximum", "select_gt", "fma", "clamp", "sum", "cumsum"]


@needs_interpreter
@pytest.mark.parametrize("op", OPS)
def test_bfloat16_arithmetic_in_the_interpreter_is_the_gpus(op):
    bfloat16_interpreter.install()
    torch.manual_seed(0)
    a = (torch.randn(64) * 3).to(torch.bfloat16)
    b = (torch.randn(64) * 3).to(torch.bfloat16)
    a[:4] = torch.tensor([-2.0, 1.5, -0.0, 3.0])  # negative values: bit order is not value order
    out = torch.empty_like(a)
    _elementwise[(1,)](a, b, out, N=64, OP=op)
    expected = _expected(op, a, b)
    assert torch.equal(out.float(), expected.float()), (op, out[:8], expected[:8])


@needs_interpreter
def test_installing_is_idempotent_and_loading_a_target_installs_it():
    assert bfloat16_interpreter.install()
    assert bfloat16_interpreter.install()
    from triton.runtime import interpreter
    assert not hasattr(interpreter.InterpreterBuilder.binary_op.__wrapped__, "__wrapped__")  # wrapped once
    load_target(f"{NATIVE_MAX}:lse")
    assert bfloat16_interpreter.installed()


@needs_interpreter
def test_a_kernel_with_its_max_in_bfloat16_passes_the_fuzzer(tmp_path):
    impl = load_target(f"{NATIVE_MAX}:lse")
    result = fuzz.check(impl, budget=20, seed=1, dtypes="bfloat16", reproducer_dir=tmp_path)
    assert result.passed, result.summary()


_UNPATCHED = """
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, {root!r})
    import torch, importlib.util
    spec = importlib.util.spec_from_file_location("native_dtype_max", {path!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    {install}
    x = torch.tensor([[1.0, -2.0, 0.5]], dtype=torch.bfloat16)
    got = module.lse(x).item()
    want = torch.logsumexp(x.double(), 1).item()
    print("right" if abs(got - want) < 1e-4 else f"wrong {{got}} {{want}}")
"""


@pytest.mark.parametrize("install, outcome", [("", "wrong"), ("from fuzz import bfloat16_interpreter; "
                                                               "bfloat16_interpreter.install()", "right")])
def test_triton_s_interpreter_alone_gets_the_bfloat16_kernel_wrong(install, outcome):
    # A fresh process with no GPU in sight: the interpreter as Triton ships it, then with the module.
    code = textwrap.dedent(_UNPATCHED.format(root=str(ROOT), path=str(NATIVE_MAX), install=install))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == outcome, done.stdout
