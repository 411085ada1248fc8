"""Constants from Python numbers in Triton's interpreter, as the compiled kernel holds them.

A kernel's Python number becomes a constant of the type the expression asks for: ``x * 1e-7`` of a
bfloat16 ``x``, ``tl.full(shape, 300, tl.int8)``, ``tl.zeros`` and sentinels. Triton's language asks
its IR builder for it (``builder.get_bf16(value)``, ``get_fp16``, ``get_int8``, ...): on a GPU the
code generator's C++ builder, on a CPU the interpreter's Python one, and the two disagree:

* **bfloat16**: the C++ builder takes the value as a C++ ``float``, writes it with
  ``std::to_string`` (``"%f"``: six decimals) and parses that decimal into bfloat16 (round to
  nearest even). A constant under 5e-7 is zero (``x * 1e-7`` is ``x * 0`` on a GPU), one under
  about 1e-3 is its six-decimal value rounded (1.5e-6 is 2e-6); above, six decimals are finer than
  bfloat16's spacing. Triton 3.9's interpreter rounds the float32 value (1e-7 stays 1e-7), Triton
  3.6's has no ``get_bf16`` at all (AttributeError on a CPU, where the GPU runs the kernel).
* **float16**: the C++ builder rounds to a C++ ``float`` first, then to float16: twice (1 + 2**-11
  + 2**-30 is 1.0, 65519.999 is +inf); the interpreter rounds the Python float once (1.0009766,
  65504).
* **integers**: the C++ builder takes a 64-bit integer (signed for ``int*``, unsigned for
  ``uint*``) and keeps its low bits (``tl.full([], 300, tl.int8)`` is 44, 2**31 as int32 is
  -2**31); a number outside that 64-bit range does not bind (a ``TypeError``, so the compile fails).
  The interpreter's NumPy refused every value outside the type's own range (``OverflowError``: a
  kernel error on the CPU that ran on the GPU).
* **a float argument**: a GPU's launch passes a Python float as an fp32 scalar, and ``x * scale``
  of a bfloat16 ``x`` computes in float32; Triton's interpreter passes the Python float itself,
  which the arithmetic then takes as a bfloat16 constant (``scale = 5e-7``: 0 on the CPU, 5e-7
  rounded once on a GPU), and ``scale.to(tl.float32)`` raised AttributeError on the CPU.
* **an int argument in [2**31, 2**32)**: an int64 to a GPU's launch; the interpreter typed it so
  but held its value as uint32, so arithmetic of two such arguments wrapped at 2**32.

:func:`install` gives the interpreter's builder the C++ builder's rules; ``tests/fuzz/interpreter/
test_constants.py`` compiles hundreds of constants of each type to TTIR with the installed Triton
(on the CPU: no GPU, no driver) and finds the interpreter's bits in every one, with Triton 3.6.0
and 3.9.0 (the same rules). float32 and float64 constants agree without it (a C++ ``float`` and
``double`` are NumPy's float32 and float64; the test holds them too).

Light on purpose, like :mod:`fuzz.interpreter.bfloat16`: the standard library, NumPy and Triton, as
it runs in the isolated worker. On a GPU the interpreter is never called and nothing changes.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

__all__ = ["INTEGERS", "bfloat16_bits", "install", "installed"]

_PATCHED = "_lse_fuzz_constant"  # marks a builder method this module made
_tl = _TensorHandle = None  # set by install(): Triton is imported only once the interpreter is chosen

INTEGERS = {"int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
            "uint8": (8, False), "uint16": (16, False), "uint32": (32, False), "uint64": (64, False)}
"""Triton's integer types with a builder method ``get_<name>``: (bits, whether the C++ builder's
argument is signed: ``int64_t`` for ``int*``, ``uint64_t`` for ``uint*``)."""


def bfloat16_bits(value: float) -> int:
    """The bits of the bfloat16 constant the compiled kernel makes of ``value``: the C++ float's
    ``std::to_string`` parsed into bfloat16, rounded to nearest even. A NaN is 0x7FC0 with its
    sign, as the parsed "nan" and "-nan"; ±inf (and a value past float's range) is ±inf."""
    with np.errstate(over="ignore"):  # past float32's range: inf, as C++'s conversion gives
        single = np.array([value], dtype=np.float64).astype(np.float32)[0]
    sign = 0x8000 if np.signbit(single) else 0
    if np.isnan(single):
        return sign | 0x7FC0
    if np.isinf(single):
        return sign | 0x7F80
    decimal = Fraction("%f" % abs(float(single)))  # std::to_string: "%f", six decimals
    return sign | (0 if decimal == 0 else _nearest_even(decimal))


def _nearest_even(value: Fraction) -> int:
    """The bits of the positive bfloat16 nearest ``value`` (ties to even; past the largest, +inf)."""
    exponent = value.numerator.bit_length() - value.denominator.bit_length()  # 2**e <= value < 2**(e+2)
    if Fraction(2) ** exponent > value:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, -126) - 7)  # 8 significant bits; subnormals below 2**-126
    rounded = round(value / quantum) * quantum  # Fraction's round() takes a tie to even
    if rounded >= 2 ** 128:
        return 0x7F80
    return int(np.float32(float(rounded)).view(np.uint32) >> np.uint32(16))  # a bfloat16 is exact in float32


def _get_bf16(self, value):
    return _handle(np.array([bfloat16_bits(float(value))], dtype=np.uint16), "bfloat16")


def _get_fp16(self, value):
    with np.errstate(over="ignore"):  # past float32's range: inf, as C++'s conversion gives
        single = np.array([value], dtype=np.float64).astype(np.float32)
    return _handle(single.astype(np.float16), "float16")


def _integer(name: str, bits: int, signed: bool):
    dtype = np.dtype(f"{'' if signed else 'u'}int{bits}")
    info = np.iinfo(dtype)
    low, high = (-(1 << 63), 1 << 63) if signed else (0, 1 << 64)

    def get(self, value):
        if not info.min <= value <= info.max:  # in range (nearly always): as Triton's own
            value = int(value)
            if not low <= value < high:  # the binding's refusal: the compile fails on a GPU
                raise TypeError(f"get_{name}(): incompatible function arguments: {value} is not a "
                                f"{'signed' if signed else 'unsigned'} 64-bit integer")
            value &= (1 << bits) - 1  # the constant's low bits, as the C++ builder keeps them
            if signed and value > info.max:
                value -= 1 << bits
        return _TensorHandle(np.array([value], dtype=dtype), getattr(_tl, name))

    get.__name__ = f"get_{name}"
    return get


def _handle(data: np.ndarray, dtype: str):
    return _TensorHandle(data, getattr(_tl, dtype))


def _launch_arguments(original):
    """Triton's conversion of a launch's arguments, with a Python float made the fp32 scalar a GPU's
    launch passes (``mangle_type`` says ``fp32``): Triton's interpreter passes it on as a Python
    float, which the kernel's arithmetic then takes as a constant of the other operand's type. And
    an int in [2**31, 2**32), an int64 to the launch (``i64``), held as int64: the interpreter typed
    it int64 but held uint32 data, so ``a + b`` of two such arguments wrapped at 2**32 (3e9 + 3e9
    was 1705032704; 6e9 on a GPU)."""
    @functools.wraps(original)
    def implicit_cvt(arg):
        if isinstance(arg, float):  # a bool is no float; a NumPy float64 is one (fp32 on a GPU too)
            with np.errstate(over="ignore"):  # past float32's range: inf, as the launch's conversion gives
                value = np.array([arg], dtype=np.float32)
            return _tl.tensor(_TensorHandle(value, _tl.float32), _tl.float32)
        if isinstance(arg, int) and not isinstance(arg, bool) and 2**31 <= arg < 2**32:
            return _tl.tensor(_TensorHandle(np.array([arg], dtype=np.int64), _tl.int64), _tl.int64)
        return original(arg)

    setattr(implicit_cvt, _PATCHED, True)
    return implicit_cvt


def install() -> bool:
    """Give the interpreter's builder the compiled kernel's constants; idempotent. False (nothing
    changed) for a Triton whose interpreter has no builder of this layout."""
    global _tl, _TensorHandle
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None or not hasattr(interpreter, "TensorHandle"):
        return False
    _tl, _TensorHandle = tl, interpreter.TensorHandle
    made = {"get_bf16": _get_bf16, "get_fp16": _get_fp16}
    made.update({f"get_{name}": _integer(name, bits, signed) for name, (bits, signed) in INTEGERS.items()})
    for name, method in made.items():
        if not getattr(builder.__dict__.get(name), _PATCHED, False):
            setattr(method, _PATCHED, True)
            setattr(builder, name, method)
    convert = getattr(interpreter, "_implicit_cvt", None)
    if convert is not None and not getattr(convert, _PATCHED, False):
        interpreter._implicit_cvt = _launch_arguments(convert)  # looked up at each launch, by name
    return True


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    return all(getattr(interpreter.InterpreterBuilder.__dict__.get(name), _PATCHED, False)
               for name in ("get_bf16", "get_fp16", "get_int32"))
