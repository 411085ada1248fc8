"""fuzz.interpreter.bfloat16: bfloat16 arithmetic in Triton's interpreter gives what a GPU gives.

The expected values are torch's own bfloat16 arithmetic on the CPU (float32 compute, one
round-to-nearest-even), the semantics of a GPU's bfloat16 instructions. Without the module the
same kernels read bit patterns, and Triton's own conversions truncate to bfloat16, garble float64
and bfloat16 subnormals: the last tests show it, in a fresh process, so that a Triton release
that fixes its interpreter fails here (then the module, or that part of it, can go).
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

import lse_fuzz
from fuzz.interpreter import bfloat16
from fuzz.interpreter.bfloat16 import cast_to_bits, to_bits, to_float32
from fuzz.target import load_target
from reference._device import interpreting

import triton  # noqa: E402  (after reference: the interpreter is on where no GPU is)
import triton.language as tl  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
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


def test_casting_from_float64_and_integers_rounds_once_where_torch_rounds_twice():
    # torch narrows float64 and int32 through float32: a value just above a bfloat16 halfway point
    # lands on it and then rounds to even, down. A GPU's cvt.rn.bf16.f64 (and .s32) rounds once, up.
    above_half = 1 + 2.0**-8 + 2.0**-30
    assert to_float32(cast_to_bits(np.array([above_half, -above_half, 1 + 2.0**-8 - 2.0**-30]))).tolist() == [
        1 + 2.0**-7, -(1 + 2.0**-7), 1.0]
    assert to_float32(cast_to_bits(np.array([2.0**-134 + 2.0**-160]))).tolist() == [2.0**-133]  # a subnormal
    assert to_float32(cast_to_bits(np.array([2**24 + 2**16 + 1], dtype=np.int32))).tolist() == [2**24 + 2**17]
    rng = np.random.default_rng(1)
    values = np.concatenate([
        rng.standard_normal(20000) * 10.0 ** rng.integers(-45, 45, 20000),  # bfloat16's range and past it
        rng.integers(0, 1 << 63, 20000, dtype=np.int64).view(np.float64),  # any bits
        np.array([1e-300, -1e-300, 1e39, 3.3961e38, 2.0**-134 + 2.0**-160, -0.0, np.inf, -np.inf]),
    ])
    with np.errstate(over="ignore", invalid="ignore"):
        single = values.astype(np.float32)
    twice = ((single.view(np.uint32) & 0xFFFF) == 0x8000) & (single != values)  # where torch rounds twice
    keep = ~np.isnan(values) & ~twice
    expected = _bits(torch.from_numpy(values[keep]).to(torch.bfloat16))
    assert np.array_equal(cast_to_bits(values[keep]), expected)
    assert np.isnan(to_float32(cast_to_bits(values[np.isnan(values)]))).all()


def test_rounding_toward_zero_truncates_and_keeps_nan():
    values = np.array([1.01171875, 65504.0, 3.4028235e38, 1e-40, -1.01171875, np.inf, -np.inf, np.nan],
                      dtype=np.float32)
    bits = cast_to_bits(values, toward_zero=True)
    assert np.array_equal(bits[:-1], (values[:-1].view(np.uint32) >> 16).astype(np.uint16))  # the same exponents
    assert np.isnan(to_float32(bits[-1:])).all()
    assert to_float32(cast_to_bits(np.array([1e39, -1e39]), toward_zero=True)).tolist() == [3.3895313892515355e38,
                                                                                             -3.3895313892515355e38]


def test_nan_gives_the_nan_bits_a_gpu_gives():
    # Measured on an H200 (Triton 3.6): cvt.rn.bf16.f32, cvt.rz.bf16.f32 and bfloat16 add, sub and
    # mul give 0x7FFF for every NaN, a signalling one too; float64's usual NaN narrows to 0x7FC0.
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], dtype=np.uint32).view(np.float32)
    assert to_bits(nans).tolist() == [0x7FFF] * 4
    assert cast_to_bits(nans, toward_zero=True).tolist() == [0x7FFF] * 4
    assert cast_to_bits(np.array([np.nan])).tolist() == [0x7FC0]


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
    elif OP == "div":
        r = a / b
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
        "div": a / b,  # in float32, rounded once (Triton widens bfloat16 for a division)
    }[op]


def _tree_sum(a: torch.Tensor) -> torch.Tensor:
    """Pairwise sums in torch's arithmetic of a's dtype, level by level (len(a) a power of two)."""
    while a.numel() > 1:
        a = a[0::2] + a[1::2]
    return a[0]


def test_a_bfloat16_sum_rounds_its_partial_sums():
    # 1 + 2**-9 is halfway between two bfloat16 values and rounds to even, 1.0: so does each partial
    # sum holding it. Added in float32 and rounded once, the same four values give 1 + 2**-8.
    bits = _bits(torch.tensor([1.0, 2.0**-9, 2.0**-9, 0.0], dtype=torch.bfloat16))
    assert to_float32(bfloat16.tree_sum(bits, 0, False)) == 1.0
    assert bfloat16.tree_sum(bits, 0, False).shape == ()  # a scalar, as the compiled sum
    assert to_float32(bfloat16.tree_sum(bits[:3], None, True)).shape == (1,)
    rows = _bits(torch.arange(12, dtype=torch.bfloat16).reshape(3, 4))
    assert to_float32(bfloat16.tree_sum(rows, 1, True)).tolist() == [[6.0], [22.0], [38.0]]


@triton.jit
def _sum_in(x_ptr, out_ptr, flag_ptr, BLOCK: tl.constexpr, DTYPE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    total = tl.sum(x, axis=0, dtype=DTYPE)
    row_max = tl.max(x, axis=0)
    # As an LSE kernel tests its row: a comparison of the sum combined with another (int1 & int1),
    # stored through a scalar pointer (a block there does not compile).
    tl.store(flag_ptr, tl.where((total == total) & (total > 0) & (row_max != float("inf")), 1.0, 2.0))
    tl.store(out_ptr, total)


SUM_DTYPES = {"bfloat16": (torch.bfloat16, tl.bfloat16), "float16": (torch.float16, tl.float16),
              "float32": (torch.float32, tl.float32), "float64": (torch.float64, tl.float64)}


@needs_interpreter
@pytest.mark.parametrize("name", list(SUM_DTYPES))
def test_a_sum_with_a_dtype_is_a_scalar_of_that_dtype(name):
    bfloat16.install()
    torch_dtype, triton_dtype = SUM_DTYPES[name]
    x = torch.linspace(0.0, 1.0, 64, dtype=torch.float32).to(torch_dtype)
    out, flag = torch.empty(1, dtype=torch_dtype), torch.empty(1)
    _sum_in[(1,)](x, out, flag, BLOCK=64, DTYPE=triton_dtype)
    assert flag.item() == 1.0
    assert out.item() == pytest.approx(32.0, rel=2e-2)


@triton.jit
def _scalar_flag_with_mask(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    total = tl.sum(x, axis=0, dtype=x.dtype)
    flag = (tl.max(x, axis=0) == float("inf")) & (total == total)  # a scalar comparison: int1
    tl.store(out_ptr + offsets, (flag | (offsets < 2)).to(tl.int8))  # broadcast against a block mask


@needs_interpreter
@pytest.mark.parametrize("name", ["bfloat16", "float16", "float32", "float64"])
def test_a_scalar_comparison_is_int1_when_broadcast_against_a_mask(name):
    # Triton's interpreter labelled a comparison's booleans with the operands' type: broadcast, they
    # became floats, and "| mask" raised TypeError (float32 too, not only bfloat16).
    bfloat16.install()
    x = torch.tensor([float("inf")] + [1.0] * 15, dtype=SUM_DTYPES[name][0])
    out = torch.empty(16, dtype=torch.int8)
    _scalar_flag_with_mask[(1,)](x, out, BLOCK=16)
    assert out.tolist() == [1] * 16
    _scalar_flag_with_mask[(1,)](torch.ones(16, dtype=x.dtype), out, BLOCK=16)
    assert out.tolist() == [1, 1] + [0] * 14


@needs_interpreter
def test_a_float16_sum_rounds_its_partial_sums_to_float16():
    # The GPU adds float16 in float16 (Triton's tl.sum keeps the input's type); numpy's float16 sum
    # accumulates in float32 and rounds once, hiding what the partial sums lose.
    bfloat16.install()
    x = torch.from_numpy(np.random.default_rng(1).uniform(0.0, 1.0, 4096).astype(np.float16))
    out, flag = torch.empty(1, dtype=torch.float16), torch.empty(1)
    _sum_in[(1,)](x, out, flag, BLOCK=4096, DTYPE=tl.float16)
    assert out.item() == _tree_sum(x).item()
    assert _tree_sum(x).item() != x.float().sum().half().item()  # the case tells the two apart


OPS = ["sub", "add_mul", "neg", "maximum", "select_gt", "fma", "clamp", "sum", "cumsum", "div"]


@needs_interpreter
@pytest.mark.parametrize("op", OPS)
def test_bfloat16_arithmetic_in_the_interpreter_is_the_gpus(op):
    bfloat16.install()
    torch.manual_seed(0)
    a = (torch.randn(64) * 3).to(torch.bfloat16)
    b = (torch.randn(64) * 3).to(torch.bfloat16)
    a[:4] = torch.tensor([-2.0, 1.5, -0.0, 3.0])  # negative values: bit order is not value order
    out = torch.empty_like(a)
    _elementwise[(1,)](a, b, out, N=64, OP=op)
    expected = _expected(op, a, b)
    assert torch.equal(out.float(), expected.float()), (op, out[:8], expected[:8])


@triton.jit
def _compare(a_ptr, b_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    cols = tl.arange(0, N)
    a = tl.load(a_ptr + cols)
    b = tl.load(b_ptr + cols)
    in_bounds = cols < N // 2  # as a masked max combines its comparison with the bounds
    if OP == "lt_and_mask":
        r = (a < b) & in_bounds
    elif OP == "ge_or_nan":
        r = (a >= b) | (a != a)
    elif OP == "not_eq":
        r = ~(a == b)
    elif OP == "where_lt_and_mask":
        r = tl.where((a < b) & in_bounds, a, b)
    else:
        r = (a > b).to(tl.bfloat16) + (a < b).to(tl.float32)  # booleans converted, then a bfloat16 sum
    tl.store(out_ptr + cols, r.to(out_ptr.dtype.element_ty))


COMPARISONS = {
    "lt_and_mask": lambda a, b, mask: (a < b) & mask,
    "ge_or_nan": lambda a, b, mask: (a >= b) | a.isnan(),
    "not_eq": lambda a, b, mask: ~(a == b),
    "where_lt_and_mask": lambda a, b, mask: torch.where((a < b) & mask, a, b),
    "bools_converted": lambda a, b, mask: ((a > b).to(torch.bfloat16).float() + (a < b).float()).to(torch.bfloat16),
}


@needs_interpreter
@pytest.mark.parametrize("op", list(COMPARISONS))
def test_bfloat16_comparisons_are_booleans_that_combine_with_masks(op):
    # A comparison of bfloat16 operands is int1, as Triton types it; it once kept the operands'
    # type here, and `& mask` widened the booleans as bfloat16: TypeError on the CPU only.
    bfloat16.install()
    torch.manual_seed(2)
    a = (torch.randn(32) * 3).to(torch.bfloat16)
    b = (torch.randn(32) * 3).to(torch.bfloat16)
    a[:6] = torch.tensor([-1.0, float("nan"), -0.0, 2.0, -3.0, float("inf")])
    b[:6] = torch.tensor([0.5, 1.0, 0.0, 2.0, -2.0, float("-inf")])  # -1 < 0.5 though its bits are larger
    expected = COMPARISONS[op](a, b, torch.arange(32) < 16)
    out = torch.empty(32, dtype=torch.bfloat16 if expected.dtype == torch.bfloat16 else torch.int8)
    _compare[(1,)](a, b, out, N=32, OP=op)
    assert torch.equal(out.float(), expected.float()), (op, out[:8], expected[:8])


@triton.jit
def _argmax_combine(value1, index1, value2, index2):  # tl.argmax's, run by tl.reduce: no numpy shortcut
    greater = (value1 > value2) | ((value1 == value2) & (index1 < index2))
    return tl.where(greater, value1, value2), tl.where(greater, index1, index2)


@triton.jit
def _row_argmax(x_ptr, out_ptr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.arange(0, ROWS)
    x = tl.load(x_ptr + rows[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
    index = tl.broadcast_to(tl.arange(0, BLOCK)[None, :], (ROWS, BLOCK))
    tl.store(out_ptr + rows, tl.reduce((x, index), 1, _argmax_combine)[1])


@needs_interpreter
def test_a_custom_argmax_combine_compares_bfloat16_values():
    bfloat16.install()
    torch.manual_seed(3)
    x = (torch.randn(4, 16) * 3).to(torch.bfloat16)
    x[0] = -x[0].abs() - 1  # all negative: the largest value has the smallest bit pattern
    x[1, 3] = x[1, 11] = 9.0  # a tie: the first index wins
    out = torch.empty(4, dtype=torch.int32)
    _row_argmax[(1,)](x, out, ROWS=4, BLOCK=16)
    assert out.tolist() == x.float().argmax(dim=1).tolist()


@triton.jit
def _convert(x_ptr, out_ptr, N: tl.constexpr, ROUNDING: tl.constexpr):
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + cols)
    if ROUNDING == "store":
        tl.store(out_ptr + cols, x)  # tl.store converts to the output's type itself
    else:
        tl.store(out_ptr + cols, x.to(out_ptr.dtype.element_ty, fp_downcast_rounding=ROUNDING))


def _launch_convert(x: torch.Tensor, dtype: torch.dtype, rounding: str | None = None) -> torch.Tensor:
    out = torch.empty(x.numel(), dtype=dtype)
    _convert[(1,)](x, out, N=x.numel(), ROUNDING=rounding)
    return out


def _float32_edges() -> torch.Tensor:
    """4096 float32 values: random magnitudes, any bit pattern, bfloat16 halfway points, overflow."""
    rng = np.random.default_rng(4)
    values = np.concatenate([
        rng.standard_normal(2000).astype(np.float32) * np.float32(1e3),
        rng.integers(0, 1 << 32, 2080, dtype=np.uint64).astype(np.uint32).view(np.float32),
        np.array([1.01171875, -1.01171875, 1.00390625, 65504.0, 70000.0, 3.3895314e38, 3.4028235e38, -3.4028235e38,
                  1e-40, 2.0**-149, -0.0, np.inf, -np.inf, np.nan], dtype=np.float32),
        np.array([0x7F800001, 0xFF800001], dtype=np.uint32).view(np.float32),  # signalling NaNs
    ])
    return torch.from_numpy(values)


def _same_bfloat16(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Bit for bit where finite or infinite, NaN where NaN (torch's NaN payloads are its own)."""
    nan = expected.isnan()
    return torch.equal(got.isnan(), nan) and np.array_equal(_bits(got[~nan]), _bits(expected[~nan]))


@needs_interpreter
@pytest.mark.parametrize("rounding", [None, "rtne", "store"])
def test_float32_to_bfloat16_rounds_to_nearest_even(rounding):
    # Triton's interpreter truncated: 1.01171875 -> 1.0078125 (not 1.015625), 65504 -> 65280,
    # float32's largest -> bfloat16's largest (not +inf), a signalling NaN -> +inf.
    bfloat16.install()
    x = _float32_edges()
    assert _same_bfloat16(_launch_convert(x, torch.bfloat16, rounding), x.to(torch.bfloat16))


@needs_interpreter
def test_float32_to_bfloat16_toward_zero_truncates_keeping_nan():
    bfloat16.install()
    x = _float32_edges()
    truncated = (x.view(torch.int32) >> 16).to(torch.int16).view(torch.bfloat16)  # RTZ: exponents alike
    truncated[x.isnan()] = float("nan")  # not +inf, as a signalling NaN's truncated bits read
    assert _same_bfloat16(_launch_convert(x, torch.bfloat16, "rtz"), truncated)


@needs_interpreter
def test_float16_and_float64_to_bfloat16_round_to_nearest_even():
    bfloat16.install()
    every_half = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(torch.float16)
    assert _same_bfloat16(_launch_convert(every_half, torch.bfloat16), every_half.to(torch.bfloat16))
    # Triton's interpreter took a float64's integer part as the bits: 1.0 -> 9.18e-41, -1.0 -> NaN, inf -> 0.
    x = _float32_edges().double()
    x[:8] = torch.tensor([1.0, -1.0, float("inf"), float("nan"), 1e-300, 1e39, 1.0 / 3.0, -2.5], dtype=torch.float64)
    assert _same_bfloat16(_launch_convert(x, torch.bfloat16), x.to(torch.bfloat16))  # no double-rounding ties


@needs_interpreter
def test_bfloat16_subnormals_widen_exactly():
    # Triton's interpreter widened 2**-133 to 0 and 1.1663108e-38 to 1.1571273e-38, so a division
    # of two subnormals was NaN and a subnormal condition was false.
    bfloat16.install()
    every = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    for dtype in (torch.float32, torch.float64):
        widened = _launch_convert(every, dtype)
        assert torch.equal(widened.isnan(), every.isnan())
        assert torch.equal(widened[~every.isnan()], every[~every.isnan()].to(dtype))
    tiny = torch.tensor([1, 0x7F, -0x7FFF, 0x40, 3, 0x7F, 1, 1], dtype=torch.int16).view(torch.bfloat16)
    other = torch.tensor([1, 0x80, 1, 0x40, -0x7FFE, 0x3F00, 0x3F00, 0], dtype=torch.int16).view(torch.bfloat16)
    out = torch.empty_like(tiny)
    _elementwise[(1,)](tiny, other, out, N=8, OP="div")
    assert _same_bfloat16(out, tiny / other)


@needs_interpreter
def test_float32_to_float16_toward_zero_saturates():
    # Triton's interpreter turned 70000, 1e10 and float32's largest into NaN; rounding toward zero gives 65504.
    bfloat16.install()
    x = torch.tensor([70000.0, 1e10, 3.4028235e38, -70000.0, 65519.0, 1 + 2.0**-10 - 2.0**-20, float("inf"),
                      float("nan")])
    expected = torch.tensor([65504.0, 65504.0, 65504.0, -65504.0, 65504.0, 1.0, float("inf"), 0.0],
                            dtype=torch.float16).view(torch.int16)
    expected[-1] = 0x7FFF  # the canonical NaN, as cvt.rz.f16.f32 gives it on an H200
    assert torch.equal(_launch_convert(x, torch.float16, "rtz").view(torch.int16), expected)
    assert torch.equal(_launch_convert(x.double(), torch.float16, "rtz").view(torch.int16), expected)


@needs_interpreter
def test_installing_is_idempotent_and_loading_a_target_installs_it():
    assert bfloat16.install()
    assert bfloat16.install()
    from triton.runtime import interpreter
    assert not hasattr(interpreter.InterpreterBuilder.binary_op.__wrapped__, "__wrapped__")  # wrapped once
    load_target(f"{NATIVE_MAX}:lse")
    assert bfloat16.installed()


@needs_interpreter
@pytest.mark.parametrize("missing", ["cast_impl", "create_fp_to_fp", "binary_op"])
def test_an_interpreter_of_another_layout_is_left_alone(monkeypatch, missing):
    from triton.runtime import interpreter
    bfloat16.install()
    monkeypatch.delattr(interpreter.InterpreterBuilder, missing)  # restored, patched, after the test
    assert not bfloat16.install()


@needs_interpreter
def test_a_kernel_with_its_max_in_bfloat16_passes_the_fuzzer(tmp_path):
    impl = load_target(f"{NATIVE_MAX}:lse")
    result = lse_fuzz.check(impl, budget=20, seed=1, dtypes="bfloat16", reproducer_dir=tmp_path)
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


@pytest.mark.parametrize("install, outcome", [("", "wrong"), ("from fuzz.interpreter import bfloat16; "
                                                               "bfloat16.install()", "right")])
def test_triton_s_interpreter_alone_gets_the_bfloat16_kernel_wrong(install, outcome):
    # A fresh process with no GPU in sight: the interpreter as Triton ships it, then with the module.
    code = textwrap.dedent(_UNPATCHED.format(root=str(ROOT), path=str(NATIVE_MAX), install=install))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == outcome, done.stdout


_CASTS = """
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, {root!r})
    import torch, triton, triton.language as tl
    {install}

    @triton.jit
    def convert(x_ptr, out_ptr, N: tl.constexpr, ROUNDING: tl.constexpr):
        cols = tl.arange(0, N)
        tl.store(out_ptr + cols, tl.load(x_ptr + cols).to(out_ptr.dtype.element_ty, fp_downcast_rounding=ROUNDING))

    def right(x, dtype, expected, rounding=None):
        out = torch.empty(x.shape, dtype=dtype)
        convert[(1,)](x, out, N=x.numel(), ROUNDING=rounding)
        return "right" if out.tolist() == expected else "wrong"

    bf16, tiny = torch.bfloat16, torch.tensor([1, 127], dtype=torch.int16).view(torch.bfloat16)
    print(right(torch.tensor([1.01171875, 65504.0]), bf16, [1.015625, 65536.0]),
          right(torch.tensor([1.0, -1.0], dtype=torch.float64), bf16, [1.0, -1.0]),
          right(tiny, torch.float32, [2.0**-133, 2.0**-126 - 2.0**-133]),
          right(torch.tensor([70000.0, 1.0]), torch.float16, [65504.0, 1.0], "rtz"))
"""


@pytest.mark.parametrize("install, outcome", [("", "wrong"), ("from fuzz.interpreter import bfloat16; "
                                                               "bfloat16.install()", "right")])
def test_triton_s_interpreter_alone_truncates_and_garbles_conversions(install, outcome):
    # float32 -> bfloat16 rounding, float64 -> bfloat16, bfloat16 subnormals widened, float16 "rtz".
    code = textwrap.dedent(_CASTS.format(root=str(ROOT), install=install))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [outcome] * 4, done.stdout
