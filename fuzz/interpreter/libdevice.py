"""libdevice in Triton's interpreter: the GPU's math library computed on the CPU, with the GPU's values.

Merge, cross-entropy and attention kernels write logaddexp with libdevice (``from
triton.language.extra import libdevice``: ``m + libdevice.log1p(s - 1)``, ``libdevice.expm1``,
``exp2``/``log2`` scaled by log2(e), ``tanh`` for soft-capping). On a GPU Triton compiles each call
to a function of CUDA's libdevice (``__nv_log1pf`` for float32, ``__nv_log1p`` for float64).
Triton's interpreter has none: its builder's ``create_extern_elementwise`` raises
NotImplementedError, and the library's stubs return None ("'NoneType' object has no attribute
'dtype'"), so a correct kernel was ``error`` on the CPU and passed on an H200.

:func:`install` gives the interpreter's builder a ``create_extern_elementwise`` that computes each
libdevice symbol with numpy. Triton's own ``extern_elementwise`` still runs first, so its dispatch
(float32 and float64 only: a float16 argument is refused as the GPU's compiler refuses it), its
broadcasting and its result types are the GPU's. The symbol's function is read from Triton's own
source of CUDA's libdevice (``__nv_log1pf`` is ``log1p``), so a Triton upgrade that adds or
renames one is named, not guessed. (:mod:`fuzz.interpreter.kernel_globals` makes every way a kernel
reaches libdevice reach that module.)

The values, per function (``SUPPORTED``):

- the math functions (exp, exp2, exp10, expm1, log, log2, log10, log1p, tanh and the other
  trigonometric and hyperbolic functions, sqrt, rsqrt, cbrt, erf, erfc, pow, hypot, atan2, the
  correctly rounded ``_rn`` arithmetic): the float64 result rounded to the argument's type. That is
  the correctly rounded value; CUDA documents its float32 functions within 1 or 2 ulp of it (expf,
  exp2f, tanhf, rsqrtf 2; log1pf, expm1f, logf, log2f 1; the ``_rn`` ones and sqrtf 0), so the
  GPU's value is at most that far. float64 arguments are computed by numpy (C's libm, within 1 ulp).
- float32 subnormals: Triton links libdevice with flush-to-zero on (``enable_reflect_ftz``, its
  NVIDIA backend's default), so a subnormal float32 argument counts as a zero of its sign and a
  subnormal float32 result is flushed to one: ``exp2(-140)`` is 0, ``tanh(-2**-149)`` is -0. Some
  functions' own code keeps them, as measured on an H200 (bench/results/interpreter-diff.md):
  ``log``, ``log2`` and ``log10`` scale a subnormal argument up (``log(2**-149)`` is -103.28, of a
  negative one NaN), ``exp`` keeps a subnormal result (``exp(-100)`` is 3.7e-44), and ``log1p`` and
  ``expm1`` give +0 for a subnormal argument of either sign.
- the fast functions are the hardware's approximations, as CUDA defines them: ``fast_expf(x)``
  is ``ex2.approx(x * log2(e))`` with the product rounded to float32 (tens of ulp from exp(x)
  where the result is tiny, as on the GPU), ``fast_logf(x)`` is ``lg2.approx(x) * ln(2)``, and
  their like; each approximate instruction is taken as correctly rounded (CUDA: within 2 ulp).
- ``isnan``, ``isinf``, ``finitef``/``isfinited``, ``signbit``: 1 or 0, by the bits, never flushed.

A libdevice function not in ``SUPPORTED`` (directed rounding, integer and conversion functions,
Bessel functions, the fast sine and cosine) raises :class:`fuzz.interpreter.emulation.EmulationUnsupported`
naming it: the CPU cannot say what the GPU computes, and the kernel is not to blame.

Light on purpose, like :mod:`fuzz.interpreter.bfloat16`: the standard library, numpy and Triton,
because it runs in the isolated worker. On a GPU the interpreter is never called and nothing changes.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math

import numpy as np

from .emulation import EmulationUnsupported

__all__ = ["SUPPORTED", "evaluate", "install", "installed"]

_PATCHED = "_lse_fuzz_libdevice"
_SMALLEST_NORMAL = np.float32(2.0**-126)
_LOG2_E, _LN_2, _LOG2_10, _LOG10_2 = (np.float32(v) for v in (math.log2(math.e), math.log(2), math.log2(10),
                                                                math.log10(2)))


def _elementwise(function):
    """A float64 -> float64 function of the standard library, over arrays."""
    return lambda x: np.frompyfunc(function, 1, 1)(x).astype(np.float64)


def _round_half_away(x):  # C's round(): numpy's rounds half to even
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole)


def _fdim(x, y):
    return np.where(np.isnan(x) | np.isnan(y), x + y, np.where(x > y, x - y, 0.0))


def _saturate(x):  # clamp to [0, 1]; NaN gives 0
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))


# Each function of its float64 argument(s): the exact value, to be rounded once to the argument's type.
_EXACT = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "rsqrt_rn": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt, "rcbrt": lambda x: 1.0 / np.cbrt(x), "rcp_rn": lambda x: 1.0 / x,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "erf": _elementwise(math.erf), "erfc": _elementwise(math.erfc),
    "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
    "round": _round_half_away, "saturatef": _saturate,
    "pow": np.power, "atan2": np.arctan2, "hypot": np.hypot, "fmod": np.fmod, "copysign": np.copysign,
    "fdim": _fdim, "div_rn": np.divide, "add_rn": np.add, "sub_rn": np.subtract, "mul_rn": np.multiply,
}
_FLOAT32_ONLY = {"fma": lambda x, y, z: x * y + z, "fma_rn": lambda x, y, z: x * y + z}  # exact product, one rounding
_CLASSIFY = {"isnan": np.isnan, "isinf": np.isinf, "finitef": np.isfinite, "isfinited": np.isfinite,
             "signbit": np.signbit}


# float32 subnormals, per function, where libdevice's code parts from plain ftz (measured on an H200).
_KEEPS_SUBNORMAL_ARGUMENT = frozenset({"log", "log2", "log10"})  # scaled up first: log(2**-149) = -149 ln 2
_KEEPS_SUBNORMAL_RESULT = frozenset({"exp"})  # exp(-100) = 3.7e-44, not 0
_SUBNORMAL_ARGUMENT_IS_PLUS_ZERO = frozenset({"log1p", "expm1"})  # log1p(-2**-149) = +0 (log1p(-0) = -0)


def _ftz(values: np.ndarray) -> np.ndarray:
    """float32 subnormals to a zero of their sign, as a GPU's ftz instructions (NaN stays)."""
    return np.where(np.abs(values) < _SMALLEST_NORMAL, np.copysign(np.float32(0.0), values), values).astype(np.float32)


def _rounded(values) -> np.ndarray:
    return _ftz(np.asarray(values, dtype=np.float64).astype(np.float32))


def _exact_float32(name: str, args: list[np.ndarray]) -> np.ndarray:
    """A math function of float32 arguments: computed in float64, rounded once, subnormals as the GPU's."""
    if name in _KEEPS_SUBNORMAL_ARGUMENT:
        wide = [a.astype(np.float64) for a in args]
    elif name in _SUBNORMAL_ARGUMENT_IS_PLUS_ZERO:
        wide = [np.where((np.abs(a) < _SMALLEST_NORMAL) & (a != 0), 0.0, a.astype(np.float64)) for a in args]
    else:
        wide = [_ftz(a).astype(np.float64) for a in args]
    result = np.asarray(_EXACT[name](*wide), dtype=np.float64).astype(np.float32)
    return result if name in _KEEPS_SUBNORMAL_RESULT else _ftz(result)


def _fast_exp2(power):  # ex2.approx.ftz.f32
    return _rounded(np.exp2(_ftz(power).astype(np.float64)))


def _fast_log2(x):  # lg2.approx.ftz.f32
    return _rounded(np.log2(_ftz(x).astype(np.float64)))


def _fast_divide(x, y):  # __fdividef: x / y, but 0 for 2**126 < |y| < 2**128 (CUDA's documented exception)
    quotient = _rounded(_ftz(x).astype(np.float64) / _ftz(y).astype(np.float64))
    huge = (np.abs(y) > np.float32(2.0**126)) & np.isfinite(y) & np.isfinite(x)
    return np.where(huge, np.float32(0.0) * np.sign(x) * np.sign(y), quotient).astype(np.float32)


# CUDA's fast intrinsics, float32 only: each a formula of approximate instructions, products rounded.
_FAST = {
    "fast_expf": lambda x: _fast_exp2(_ftz(x) * _LOG2_E),
    "fast_exp10f": lambda x: _fast_exp2(_ftz(x) * _LOG2_10),
    "fast_log2f": _fast_log2,
    "fast_logf": lambda x: _ftz(_fast_log2(x) * _LN_2),
    "fast_log10f": lambda x: _ftz(_fast_log2(x) * _LOG10_2),
    "fast_powf": lambda x, y: _fast_exp2(_ftz(_ftz(y) * _fast_log2(x))),
    "fast_dividef": _fast_divide,
}
SUPPORTED = tuple(sorted({*_EXACT, *_FLOAT32_ONLY, *_CLASSIFY, *_FAST}))
"""The libdevice functions the interpreter computes (as ``libdevice.NAME``); any other raises EmulationUnsupported."""


def evaluate(name: str, args: list[np.ndarray]) -> np.ndarray:
    """libdevice's ``name`` of numpy arguments (float32 or float64, one type), as the GPU gives it:
    float32 or float64 values, int32 for the classifications."""
    float32 = args[0].dtype == np.float32
    with np.errstate(all="ignore"):  # log(0), 0/0 and overflow are values here, as on the GPU
        if name in _CLASSIFY:
            return _CLASSIFY[name](args[0]).astype(np.int32)
        if name in _FAST and float32:
            return _FAST[name](*args)
        if name in _FLOAT32_ONLY and float32:
            return _rounded(_FLOAT32_ONLY[name](*(_ftz(a).astype(np.float64) for a in args)))
        if name in _EXACT:
            if not float32:
                return _EXACT[name](*args).astype(np.float64)
            return _exact_float32(name, args)
    precision = "float32" if float32 else "float64"
    raise EmulationUnsupported(f"libdevice.{name}", f"no CPU version of its {precision} form computes the GPU's value")


@functools.cache
def _functions_by_symbol() -> dict[str, str]:
    """CUDA libdevice symbol -> the name of the Triton function that calls it (``__nv_log1pf`` ->
    ``log1p``), read from the source of Triton's own ``triton.language.extra.cuda.libdevice``."""
    from triton.language.extra.cuda import libdevice  # noqa: PLC0415 (read on the first call only)
    names = {}
    for node in ast.parse(inspect.getsource(libdevice)).body:
        if isinstance(node, ast.FunctionDef):
            for constant in ast.walk(node):
                if isinstance(constant, ast.Constant) and str(constant.value).startswith("__nv_"):
                    names[constant.value] = node.name
    return names


def _create_extern_elementwise(get_np_dtype, tensor_handle):
    def create_extern_elementwise(self, lib_name, lib_path, symbol, arg_list, ret_type, is_pure):
        name = _functions_by_symbol().get(symbol, symbol)
        values = evaluate(name, [np.asarray(arg.data) for arg in arg_list])
        scalar = getattr(ret_type, "scalar", ret_type)  # a block type's element type
        return tensor_handle(values.astype(get_np_dtype(scalar)), scalar)

    return create_extern_elementwise


def install() -> bool:
    """Compute libdevice calls in the interpreter; idempotent. False (nothing changed) for a Triton
    whose interpreter has no ``create_extern_elementwise`` to replace."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = interpreter.InterpreterBuilder
    if getattr(builder.__dict__.get("create_extern_elementwise"), _PATCHED, False):
        return True
    if "create_extern_elementwise" not in builder.__dict__ or not hasattr(interpreter, "_get_np_dtype"):
        return False
    replacement = _create_extern_elementwise(interpreter._get_np_dtype, interpreter.TensorHandle)
    setattr(replacement, _PATCHED, True)
    builder.create_extern_elementwise = replacement
    return True


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    return getattr(interpreter.InterpreterBuilder.__dict__.get("create_extern_elementwise"), _PATCHED, False)
