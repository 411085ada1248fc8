"""fuzz.interpreter.constants: a Python number's constant in the interpreter is the compiled kernel's.

The ground truth is Triton's own code generator: the installed Triton compiles one small kernel per
constant to TTIR on the CPU (no GPU, no driver), in a process of its own without the interpreter,
and the constant it writes there is what a GPU computes with. The interpreter's builder, with the
module installed, must make the same bits for every one; without it, it does not (Triton 3.9's
interpreter keeps 1e-7 as a bfloat16 where the kernel has 0, and refuses 300 as an int8 where the
kernel has 44).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from fuzz.interpreter import bfloat16, constants
from fuzz.interpreter.bfloat16 import to_float32
from fuzz.interpreter.constants import INTEGERS, bfloat16_bits
from reference._device import interpreting

import triton  # noqa: E402  (after reference: the interpreter is on where no GPU is)
import triton.language as tl  # noqa: E402

pytestmark = [pytest.mark.skipif(not interpreting(), reason="Triton's interpreter only (no GPU here)"),
              pytest.mark.xdist_group("compiled_constants")]  # one worker compiles them once

_RNG = np.random.default_rng(0)
FLOATS = [1e-7, 4.9e-7, 5e-7, 6e-7, 1.5e-6, -1e-7, 0.0078125, 0.1, 1e39, 2.0 ** -133, 3.4e38,
          1 + 2.0 ** -11 + 2.0 ** -30, 65519.999, 65520.0, 6e-8, float("inf"), float("-inf"), float("nan")]
FLOATS += [float(v) for v in _RNG.choice([-1, 1], 250) * 10.0 ** _RNG.uniform(-9, 38, 250)]
FLOATS += [float(v) for v in _RNG.uniform(-1, 1, 142) * 10.0 ** _RNG.integers(-6, 5, 142)]
INTS = [0, 1, -1, 127, 128, -128, -129, 255, 256, 300, 32767, 32768, -32769, 40000, 65535, 65536,
        2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, -2 ** 63, 2 ** 63, 2 ** 64 - 1,
        2 ** 64, -2 ** 63 - 1]
INTS += [int(v) for v in _RNG.integers(-2 ** 40, 2 ** 40, 20)]
TYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64", **{name: name.replace("uint", "u").replace("int", "i")
                                                   for name in INTEGERS}}

_CODE_GENERATOR = """
    import json
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend
    from triton._C.libtriton import ir
    import kernels

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({})
    found = {}
    for dtype, (pointer, functions) in kernels.KERNELS.items():
        found[dtype] = []
        for function in functions:
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            try:
                module = ASTSource(function, {"out": pointer}, {}, {}).make_ir(
                    target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
            except Exception as error:  # the binding refused the value: the compile fails
                found[dtype].append("refused: " + str(error).splitlines()[-1][:200])
                continue
            lines = [line for line in str(module).splitlines() if "arith.constant" in line]
            found[dtype].append(lines[-1].split("arith.constant ")[1].split(" loc")[0])
    print(json.dumps(found))
"""

_METHODS = {"bfloat16": "get_bf16", "float16": "get_fp16", "float32": "get_fp32", "float64": "get_fp64"}  # the builder's method of a type, else get_<type>
_SPECIAL = {"inf": "INF", "-inf": "MINUS_INF", "nan": "NAN"}  # a kernel reads these as constexpr globals


def _values(dtype: str) -> list:
    # float32 and float64 agree already (a C++ float and double are NumPy's): a quarter of the floats.
    return INTS if dtype in INTEGERS else FLOATS if dtype in ("bfloat16", "float16") else FLOATS[::4]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, list[str]]:
    """dtype -> what Triton's code generator writes for ``tl.full([], v, dtype)`` of each value
    ("<value> : <type>"), or "refused: ..." where the compile fails."""
    folder = tmp_path_factory.mktemp("constants")
    lines = ["import triton, triton.language as tl"]
    lines += [f"{name} = tl.constexpr(float({text!r}))" for text, name in _SPECIAL.items()]
    table = []
    for dtype, short in TYPES.items():
        names = []
        for i, value in enumerate(_values(dtype)):
            names.append(f"{dtype}_{i}")
            lines += ["@triton.jit", f"def {names[-1]}(out):",
                      f"    tl.store(out, tl.full([], {_SPECIAL.get(repr(value), repr(value))}, tl.{dtype}))"]
        table.append(f"    {dtype!r}: ('*{short}', [{', '.join(names)}]),")
    lines += ["KERNELS = {", *table, "}"]
    (folder / "kernels.py").write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_CODE_GENERATOR)], cwd=folder, capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(folder), "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compiled_bits(text: str, dtype: str) -> int | None:
    """The bits of the constant MLIR printed (``0x7F80`` for a special float, else about seven
    digits: far finer than bfloat16's or float16's spacing), None where the compile was refused."""
    if text.startswith("refused"):
        return None
    text = text.split(" : ")[0]
    if dtype in INTEGERS:
        return int(text) & ((1 << INTEGERS[dtype][0]) - 1)
    if text.startswith("0x"):
        return int(text, 16)
    if dtype in ("float16", "float32", "float64"):  # MLIR prints these so that they read back exactly
        return int(np.array([float(text)], dtype=dtype).view(f"uint{np.dtype(dtype).itemsize * 8}")[0])
    value = abs(float(text))
    near = int(np.float32(value).view(np.uint32)) >> 16
    candidates = [c for c in (near - 1, near, near + 1) if 0 <= c < 0x7F80]
    best = min(candidates, key=lambda c: abs(float(to_float32(np.array([c], dtype=np.uint16))[0]) - value))
    return best | (0x8000 if text.startswith("-") else 0)


def _interpreted_bits(dtype: str, value) -> int | None:
    """The bits the interpreter's builder makes (None where it refuses the value)."""
    from triton.runtime import interpreter

    try:
        handle = getattr(interpreter.interpreter_builder, _METHODS.get(dtype, f"get_{dtype}"))(value)
    except (TypeError, OverflowError):
        return None
    data = np.asarray(handle.data)
    width = INTEGERS[dtype][0] if dtype in INTEGERS else 16 if dtype in ("bfloat16", "float16") else \
        np.dtype(dtype).itemsize * 8
    return int(data.view(np.dtype(f"uint{width}"))[0])


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # past float16's range, as intended
@pytest.mark.parametrize("dtype", list(TYPES))
def test_the_interpreter_s_constants_are_triton_s_code_generator_s(compiled, dtype):
    bfloat16.install()
    constants.install()
    values = _values(dtype)
    assert len(compiled[dtype]) == len(values)
    differ = [(v, c, _interpreted_bits(dtype, v)) for v, c in zip(values, compiled[dtype])
              if _compiled_bits(c, dtype) != _interpreted_bits(dtype, v)]
    assert not differ, differ[:10]
    if dtype == "bfloat16":  # 1e-7 and 4.9e-7 are zero there; bfloat16_bits is the rule the builder uses
        assert [_interpreted_bits(dtype, v) for v in values[:2]] == [0, 0]
        assert all(_interpreted_bits(dtype, v) == bfloat16_bits(v) for v in values)
    elif dtype == "float16":  # rounded twice: 1.0 and +inf (once: 1.0009766 and 65504)
        assert [_interpreted_bits(dtype, v) for v in values[11:13]] == [0x3C00, 0x7C00]
    elif dtype == "int8":
        assert _interpreted_bits(dtype, 300) == 44 and _interpreted_bits(dtype, -129) == 127


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # Triton's float16 cast, as intended
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int8", "int32", "uint8"])
def test_without_the_module_the_interpreter_s_constants_differ(compiled, dtype, monkeypatch):
    """The test above fails without the module: the interpreter's own builder disagrees with the
    code generator on some constant of each of these types (a 3.6 builder lacks ``get_bf16``)."""
    from triton.runtime import interpreter

    for name in ("get_bf16", "get_fp16", *(f"get_{n}" for n in INTEGERS)):
        own = getattr(interpreter.InterpreterBuilder, name, None)
        if getattr(own, "_lse_fuzz_constant", False):
            monkeypatch.setattr(interpreter.InterpreterBuilder, name, _triton_s_own(name))
    values = _values(dtype)
    differ = [v for v, c in zip(values, compiled[dtype]) if _compiled_bits(c, dtype) != _interpreted_bits(dtype, v)]
    assert differ


def _triton_s_own(name: str):
    """The interpreter's builder method as Triton 3.9 defines it (3.6 has no ``get_bf16``)."""
    if name == "get_bf16":
        return lambda self, value: self.create_fp_trunc(self.get_fp32(value), tl.bfloat16)
    from triton.runtime.interpreter import TensorHandle

    dtype = {"get_fp16": "float16"}.get(name, name[len("get_"):])
    return lambda self, value: TensorHandle(np.array([value], dtype=np.dtype(dtype)), getattr(tl, dtype))


@triton.jit
def _times_constant(x_ptr, out_ptr, N: tl.constexpr, C: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, x * C + tl.full((N,), C, tl.bfloat16))


@pytest.mark.parametrize("constant", [1.5, 0.1, 1.4426950408889634, 1e-7, -1e-7, 1.5e-6, 1e-38])
def test_a_kernel_computes_with_the_compiled_kernel_s_bfloat16_constant(monkeypatch, constant):
    """``x * C + tl.full(..., C, tl.bfloat16)`` of a bfloat16 ``x`` computes with the code
    generator's C (1e-7 is 0: the result is 0, as on a GPU); where the interpreter has no way to
    make the constant (Triton 3.6: the kernel raised), the module gives it one."""
    from triton.runtime.interpreter import InterpreterBuilder

    bfloat16.install()
    constants.install()
    x = torch.tensor([1.0, -3.0, 0.5, 2.0], dtype=torch.bfloat16)
    got = torch.empty_like(x)
    _times_constant[(1,)](x, got, 4, constant)
    c = torch.tensor([bfloat16_bits(constant)], dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    torch.testing.assert_close(got, x * c + c, rtol=0, atol=0)
    if abs(constant) < 5e-7:
        assert c.item() == 0 and torch.equal(got, torch.zeros_like(x))
    monkeypatch.delattr(InterpreterBuilder, "get_bf16")
    with pytest.raises(Exception, match="get_bf16"):  # as on Triton 3.6, without the module's
        _times_constant[(1,)](x, torch.empty_like(x), 4, constant)
    constants.install()
    again = torch.empty_like(x)
    _times_constant[(1,)](x, again, 4, constant)
    assert torch.equal(again.view(torch.int16), got.view(torch.int16))


def test_install_is_idempotent_and_installed_says_so():
    assert constants.install() and constants.install()
    assert constants.installed()


@triton.jit
def _times_argument(x_ptr, out_ptr, scale, N: tl.constexpr, WIDEN: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)
    if WIDEN:
        scale = scale.to(tl.float32)  # a tensor on a GPU: it has .to
    tl.store(out_ptr + offsets, x * scale)


@pytest.mark.parametrize("widen", [False, True], ids=["as-is", "to-float32"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_float_argument_is_the_launch_s_float32_value_not_a_constant(dtype, widen):
    """A GPU's launch passes ``scale`` as an fp32 scalar: ``x * scale`` of a bfloat16 or float16 ``x``
    computes in float32 and rounds once (Triton's TTIR: extf, mulf f32, truncf). Triton's interpreter
    passed the Python float, a constant of ``x``'s type there: 5e-7 was bfloat16 0 (a product of 0),
    and ``scale.to(...)`` raised AttributeError."""
    from triton.runtime import interpreter

    bfloat16.install()
    constants.install()
    x = torch.tensor([1.0, -3.0, 0.5, 2.0], dtype=dtype)
    for scale in (5e-7, 1.5e-6, 0.1, 3.0e38):
        got = torch.empty_like(x)
        _times_argument[(1,)](x, got, scale, 4, widen)
        want = (x.float() * torch.tensor(scale, dtype=torch.float32)).to(dtype)
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (scale, got, want)
    # Without the conversion (Triton's own), the interpreter takes the float as a constant.
    convert = interpreter._implicit_cvt
    try:
        interpreter._implicit_cvt = convert.__wrapped__
        got = torch.empty_like(x)
        if widen:
            with pytest.raises(Exception, match="has no attribute .to."):
                _times_argument[(1,)](x, got, 5e-7, 4, widen)
        elif dtype is torch.bfloat16:
            _times_argument[(1,)](x, got, 5e-7, 4, widen)
            assert torch.equal(got, torch.zeros_like(x))  # x * bfloat16(0): the constant's rule
    finally:
        interpreter._implicit_cvt = convert



_WRAPPED = """
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
@triton.jit
def k(out_ptr, a, b):
    tl.store(out_ptr, a + b)
    tl.store(out_ptr + 1, a * b)
    tl.store(out_ptr + 2, a - b - b)
out = torch.zeros(3, dtype=torch.int64)
k[(1,)](out, 3_000_000_000, 3_000_000_000)
print(out.tolist())
"""


@triton.jit
def _integer_arithmetic(out_ptr, a, b):
    tl.store(out_ptr, a + b)
    tl.store(out_ptr + 1, a * b)
    tl.store(out_ptr + 2, a - b - b)


def test_an_int_argument_past_int32_is_the_launch_s_int64():
    """A GPU's launch passes an int in [2**31, 2**32) as an int64 (``mangle_type``: ``i64``), and
    arithmetic of two of them does not wrap. Triton's own interpreter (in a fresh process: nothing
    of the fuzzer's installed) typed it int64 but held uint32 data: 3e9 + 3e9 wrapped at 2**32."""
    from triton.runtime.jit import mangle_type

    constants.install()
    a = b = 3_000_000_000
    assert mangle_type(a) == "i64"
    want = [a + b, a * b, a - b - b]
    got = torch.zeros(3, dtype=torch.int64)
    _integer_arithmetic[(1,)](got, a, b)
    assert got.tolist() == want
    plain = subprocess.run([sys.executable, "-c", _WRAPPED], capture_output=True, text=True, timeout=300)
    assert plain.stdout.strip() == str([v % 2**32 for v in want]), plain.stderr[-2000:]  # wrapped at 2**32
