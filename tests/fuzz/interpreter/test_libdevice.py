"""fuzz.interpreter.libdevice: libdevice's functions in Triton's interpreter, with the GPU's values.

Triton's interpreter has no libdevice: ``libdevice.log1p(x)`` in a kernel raised AttributeError
("'NoneType' object has no attribute 'dtype'") on the CPU, while the GPU compiles and runs it. The
expected values here are torch's float64 functions rounded to the argument's type, with float32
subnormals flushed to zero where Triton's libdevice (``enable_reflect_ftz``) flushes them on an H200; the fast
functions are the hardware's formulas (``ex2.approx`` of ``x * log2(e)``). A function with no CPU
version raises :class:`fuzz.interpreter.emulation.EmulationUnsupported` naming it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reference._device import ensure_interpreter, interpreting

ensure_interpreter()  # before anything imports triton: Triton's library is built for the mode

from fuzz.interpreter import frontend, kernel_globals, libdevice as interpreter_libdevice  # noqa: E402
from fuzz.interpreter.emulation import EmulationUnsupported  # noqa: E402

import triton  # noqa: E402  (after reference: the interpreter is on where no GPU is)
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402
from triton.runtime.errors import InterpreterError  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting(), reason="Triton's interpreter only (no GPU here)")
interpreter_libdevice.install()
kernel_globals.install()
frontend.install()

NAN, INF = math.nan, math.inf
SMALLEST_NORMAL = 2.0**-126
# bench/interpreter_diff.py's float32 edges, and values where log1p and expm1 part from log and exp.
EDGES = [NAN, INF, -INF, -0.0, 0.0, 2.0**-149, 2.0**-126 - 2.0**-149, 2.0**-126, 3.4028234663852886e38,
         -3.4028234663852886e38, 1.0, -1.0, -2.0**-149, 0.5, -2.5, 100.0, 1e-8, -1e-8, 1e-30, 0.75, -0.75, 20.0,
         -100.0, 88.0, -0.999999]
REFERENCE = {"log1p": torch.log1p, "expm1": torch.expm1, "exp": torch.exp, "exp2": torch.exp2, "log": torch.log,
             "log2": torch.log2, "log10": torch.log10, "tanh": torch.tanh, "rsqrt": torch.rsqrt, "sqrt": torch.sqrt,
             "sqrt_rn": torch.sqrt, "sin": torch.sin, "cos": torch.cos, "erf": torch.erf, "abs": torch.abs,
             "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "rint": torch.round,
             "sinh": torch.sinh, "cosh": torch.cosh, "atan": torch.atan}


@triton.jit
def _unary(x_ptr, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, getattr(libdevice, FN)(tl.load(x_ptr + offsets)))


@triton.jit
def _binary(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, getattr(libdevice, FN)(tl.load(x_ptr + offsets), tl.load(y_ptr + offsets)))


def _run(fn: str, x: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    out = torch.empty(x.numel(), dtype=out_dtype or x.dtype)
    _unary[(1,)](x, out, FN=fn, BLOCK=x.numel())
    return out


def _edges(dtype=torch.float32) -> torch.Tensor:
    values = EDGES + [0.25] * (32 - len(EDGES))
    return torch.tensor(values, dtype=torch.float64).to(dtype)


def _flushed(t: torch.Tensor) -> torch.Tensor:
    """float32 values with subnormals flushed to zero of the same sign, as the GPU's ftz does."""
    return torch.where(t.abs() < SMALLEST_NORMAL, torch.zeros_like(t).copysign(t), t)


def _gpu_value(fn: str, x: torch.Tensor) -> torch.Tensor:
    """What the H200 gave on 2026-12-04 (bench/results/interpreter-diff.md): the float64 result
    rounded, with float32 subnormals flushed, except where libdevice's own code keeps them."""
    if x.dtype == torch.float64:  # no ftz in float64
        return REFERENCE[fn](x)
    if fn in ("log", "log2", "log10"):  # __nv_logf and its like scale a subnormal argument up: log(2**-149) = -103.28
        argument = x
    elif fn in ("log1p", "expm1"):  # a subnormal argument of either sign gives +0 (and -0 gives -0)
        argument = torch.where((x.abs() < SMALLEST_NORMAL) & (x != 0), torch.zeros_like(x), x)
    else:
        argument = _flushed(x)
    result = REFERENCE[fn](argument.double()).float()
    return result if fn == "exp" else _flushed(result)  # __nv_expf keeps a subnormal result: exp(-100)


def _same(got: torch.Tensor, expected: torch.Tensor) -> bool:
    return bool(torch.equal(got.isnan(), expected.isnan())
                and torch.equal(torch.nan_to_num(got, 0.0).signbit(), torch.nan_to_num(expected, 0.0).signbit())
                and torch.equal(torch.nan_to_num(got, 0.0), torch.nan_to_num(expected, 0.0)))


@pytest.mark.parametrize("fn", list(REFERENCE))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_a_libdevice_function_gives_the_float64_result_rounded_to_its_type(fn, dtype):
    x = _edges(dtype)
    got, expected = _run(fn, x), _gpu_value(fn, x)
    if dtype == torch.float64:  # numpy's libm and torch's may part by an ulp
        assert torch.allclose(got, expected, rtol=2 * 2.0**-52, atol=0, equal_nan=True), (fn, got - expected)
        return
    assert _same(got, expected), [(v, g, e) for v, g, e in zip(x.tolist(), got.tolist(), expected.tolist())
                                  if not _same(torch.tensor([g]), torch.tensor([e]))]


def test_log1p_and_expm1_keep_the_digits_log_and_exp_lose():
    x = torch.tensor([1e-8, -1e-8, 1e-30, 2.0**-20] + [0.5] * 12)
    assert _run("log1p", x)[:4].tolist() == pytest.approx([1e-8, -1e-8, 1e-30, 2.0**-20], rel=1e-6)
    assert _run("expm1", x)[:4].tolist() == pytest.approx([1e-8, -1e-8, 1e-30, 2.0**-20], rel=1e-6)
    assert torch.log(1 + x[:4]).tolist()[0] == 0.0  # what a kernel writing log(1 + x) gets


def test_float32_subnormals_are_flushed_where_the_gpu_s_libdevice_flushes_them():
    """Measured on an H200 (Triton 3.6): Triton links libdevice with ftz on, yet logf and log2f scale a
    subnormal argument up, expf keeps a subnormal result, and log1pf and expm1f give +0 for a negative
    subnormal argument; exp2f, tanhf and sqrtf flush."""
    tiny, smallest = 2.0**-140, 2.0**-149
    x = torch.tensor([tiny, -tiny, -100.0, -88.0, -smallest, smallest] + [1.0] * 10)
    assert _run("log", x)[:2].tolist()[0] == pytest.approx(-140 * math.log(2))
    assert math.isnan(_run("log", x)[1])  # a negative subnormal is negative: NaN, not log(-0) = -inf
    assert _run("log2", x)[:2].tolist()[0] == -140.0
    assert _run("exp", x)[2:4].tolist() == [torch.tensor(math.exp(-100)).float().item(),
                                            torch.tensor(math.exp(-88)).float().item()]
    assert 0 < _run("exp", x)[2] < SMALLEST_NORMAL  # a subnormal result, not flushed
    assert _run("exp2", torch.tensor([-140.0] * 16))[0].item() == 0.0  # exp2f flushes it
    for fn in ("log1p", "expm1"):
        assert [str(v) for v in _run(fn, x)[:6].tolist()] == ["0.0", "0.0", *[str(v) for v in
                                                                               _run(fn, x)[2:4].tolist()],
                                                              "0.0", "0.0"], fn
    assert [str(v) for v in _run("tanh", x)[4:6].tolist()] == ["-0.0", "0.0"]  # tanhf flushes, keeping the sign
    assert _run("log", x.double())[0] == pytest.approx(-140 * math.log(2))  # float64 has no ftz


@pytest.mark.parametrize("fn, expected", [("isnan", [1, 0, 0, 0, 0]), ("isinf", [0, 1, 1, 0, 0]),
                                          ("signbit", [0, 0, 1, 1, 0]), ("finitef", [0, 0, 0, 1, 1])])
def test_classification_functions_give_the_gpu_s_integers(fn, expected):
    x = torch.tensor([NAN, INF, -INF, -0.0, 2.0**-149] + [1.0] * 11)
    got = _run(fn, x, out_dtype=torch.int32)[:5]
    assert [int(v != 0) for v in got.tolist()] == expected


def _fast_expf(x: torch.Tensor) -> torch.Tensor:
    """The GPU's __expf: ex2.approx.ftz of x * log2(e), the product rounded to float32."""
    product = _flushed(x * torch.tensor(1.4426950408889634, dtype=torch.float32))
    return _flushed(torch.exp2(product.double()).float())


def test_fast_expf_is_the_hardware_s_exp2_of_a_rounded_product():
    x = torch.tensor([-77.0, -10.5, -1.0, 0.0, 1.0, 10.0, 88.0, 89.0, -87.5, -104.0, NAN, INF, -INF, 0.3, 3.3, 50.0])
    got = _run("fast_expf", x)
    assert _same(got, _fast_expf(x))
    assert got[0] != torch.exp(x[0].double()).float()  # at -77 the product's rounding shows (tens of ulp)


def test_fast_logf_is_the_hardware_s_log2_times_ln2():
    x = torch.tensor([2.0**-140, 0.5, 1.0, 2.0, 10.0, 1e30, INF, -1.0, 0.0, NAN, 3.0, 7.0, 1e-30, 100.0, 0.1, 0.9])
    ln2 = torch.tensor(0.6931471805599453, dtype=torch.float32)
    expected = _flushed(torch.log2(_flushed(x).double()).float()) * ln2
    assert _same(_run("fast_logf", x), expected)


def test_binary_functions_round_once():
    x = torch.tensor([1.0, 2.0, -3.0, 1e-30, 7.0, 0.1, INF, NAN] * 2)
    y = torch.tensor([3.0, 0.5, 2.0, 1e30, 0.0, 0.3, 2.0, 1.0] * 2)
    out = torch.empty(16)
    _binary[(1,)](x, y, out, FN="div_rn", BLOCK=16)
    assert _same(out, _flushed((x.double() / y.double()).float()))
    _binary[(1,)](x, y, out, FN="pow", BLOCK=16)
    assert _same(out, _flushed(torch.pow(x.double(), y.double()).float()))


def test_a_half_precision_argument_is_refused_as_the_gpu_s_compiler_refuses_it():
    # libdevice has float32 and float64 versions only: Triton's dispatch finds no float16 one,
    # on a GPU at compile time, here at the call (the front end refuses it first).
    with pytest.raises(Exception) as raised:
        _run("log1p", torch.ones(16, dtype=torch.float16))
    assert not isinstance(raised.value, (AttributeError, EmulationUnsupported))
    assert "float16" in str(raised.value)


def test_a_function_with_no_cpu_version_raises_emulation_unsupported_naming_it():
    with pytest.raises(InterpreterError) as raised:
        _run("erfcinv", torch.full((16,), 0.5))
    cause = raised.value.__cause__
    assert isinstance(cause, EmulationUnsupported), repr(cause)
    assert cause.construct == "libdevice.erfcinv"
    assert "libdevice.erfcinv" in str(cause) and cause.reason


def test_install_is_idempotent():
    assert interpreter_libdevice.install() and interpreter_libdevice.install()
    assert interpreter_libdevice.installed()
    assert set(interpreter_libdevice.SUPPORTED) >= {"log1p", "expm1", "exp", "exp2", "log", "log2", "tanh",
                                                     "rsqrt", "fast_expf", "fast_logf", "isnan", "isinf",
                                                     "signbit"}


def test_the_values_are_computed_in_float64_then_rounded():
    x = np.array([0.1, 1e-7, -0.5], dtype=np.float32)
    assert np.array_equal(interpreter_libdevice.evaluate("log1p", [x]),
                          _flushed(torch.log1p(torch.from_numpy(x).double()).float()).numpy())
