"""bfloat16 arithmetic in Triton's interpreter, computed on the values, as a GPU computes it.

numpy has no bfloat16, so Triton's interpreter keeps a bfloat16 tensor as its uint16 bit patterns,
and its arithmetic hands those patterns to numpy as they are (Triton 3.9, the version the tests
pin; its docs say the interpreter "does not support operations on bfloat16"). On a CPU, ``a - b`` of
two bfloat16 tensors subtracts integers, ``-a`` is a two's complement, ``tl.maximum`` and ``a > b``
order negative numbers backwards and ``tl.sum`` adds bit patterns: a kernel that computes
anything in bfloat16 before widening gets garbage from the interpreter and the right answer from
a GPU. The same kernel would get two verdicts, a false alarm on the CPU. (``tl.max`` and
``tl.min`` widen bfloat16 to float32 first, which is why most kernels never notice.)

:func:`install` makes the interpreter widen bfloat16 operands to float32, compute, and round a
bfloat16 result back to nearest even. That is what a GPU computes: sm_90 adds, multiplies, fuses
and compares bfloat16 natively with one round-to-nearest-even, and where Triton widens to float32
(older GPUs, the math functions) it rounds the result the same way. Widening is exact, a product
of two bfloat16 is exact in float32, and a sum rounded first to float32 and then to bfloat16 is
the sum rounded once (its float32 rounding cannot land on a bfloat16 halfway point), so the
elementwise results are the GPU's, bit for bit (a NaN result is 0x7FFF, as an H200 gives).
``tl.sum`` of bfloat16 adds in a tree of pairwise sums, each rounded to bfloat16, as a GPU's
partial sums are (the order of the pairs is not the GPU's, so the last bits may differ, not the
size of the error); ``tl.sum`` of float16 too, in float16 (Triton's ``tl.sum`` keeps a float
input's type, ``dtype=`` or not; numpy's float16 sum accumulates in float32 and rounds once). A sum
to one element is a scalar, as the compiled reduction's is (storing it through a scalar pointer
raised "Value argument cannot be block type" for bfloat16). Scans (``tl.cumsum``) fold in float32 and round once. A comparison of
bfloat16 values gives int1 booleans (Triton's own ``binary_op`` labels them with the operands'
type, which would send ``(x < y) & mask`` through the widening again, a TypeError on the CPU only);
so does a comparison of any other type, whose label made a scalar comparison broadcast against a
block mask a float (``(m == inf) | mask``: TypeError, for float32 too).

Conversions too, because Triton's interpreter converts bfloat16 with a routine of its own
(``_convert_float``) that truncates: ``x.to(tl.bfloat16)``, with or without
``fp_downcast_rounding="rtne"``, and the implicit conversion of ``tl.store`` gave 1.0078125 for
1.01171875 and bfloat16's largest for float32's largest, where a GPU's ``cvt.rn.bf16.f32`` rounds
to 1.015625 and +inf; a signalling NaN became +inf. It widened bfloat16 subnormals wrongly (2**-133
to 0), and it took a float64's or an integer's value as bfloat16 bits (1.0 to 9.2e-41). Here
``cast_impl`` and ``create_fp_to_fp`` convert to bfloat16 by value, rounded once to nearest even
(float64 and integers through a round-to-odd float32, so never twice), toward zero for
``"rtz"``, a NaN to the H200's NaN; and widen bfloat16 by shifting its bits. float32 and float64 to
float16 with ``"rtz"`` round toward zero as ``cvt.rz.f16`` does (Triton's routine overflowed to
NaN: 70000 gave NaN, not 65504). Constants from Python numbers (``x * 1e-7``) are
:mod:`fuzz.interpreter.constants`'s. Only bfloat16 (and that float16 rounding) changes; float8 types
(also kept as bits), atomics on bfloat16 and the interpreter's other conversions are left as
Triton has them.

Light on purpose, like :mod:`fuzz.interpreter.autotune`: standard library, numpy and Triton only, because it
runs in the isolated worker. It replaces methods on the interpreter's classes (idempotent), so it
holds for kernels decorated before or after it runs; on a GPU the interpreter is never called and
nothing changes.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["cast_to_bits", "half_tree_sum", "install", "installed", "to_bits", "to_float32", "tree_sum"]

_PATCHED = "_lse_fuzz_bfloat16"  # marks a replacement, so install() is idempotent
# Set by install(), not at import: importing Triton before the interpreter is chosen would build
# its library functions for the wrong mode (reference._device), and every operation reads these.
_BFLOAT16 = _FLOAT16 = _FLOAT32 = _INT1 = None
_TensorHandle = None
_RTZ = None  # the interpreter's ir.ROUNDING_MODE.RTZ


def to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> their float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_bits(values: np.ndarray) -> np.ndarray:
    """float32 values -> bfloat16 bit patterns (uint16), rounded to nearest even; any NaN gives
    0x7FFF, the canonical NaN that an H200's ``cvt.rn.bf16.f32`` and bfloat16 arithmetic return."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    # Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry past the largest finite
    # value reaches the exponent's all-ones pattern, infinity, as the GPU's conversion does.
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.where(np.isnan(values), np.uint32(0x7FFF), rounded).astype(np.uint16)


def cast_to_bits(values: np.ndarray, *, toward_zero: bool = False) -> np.ndarray:
    """Float or integer values of any width -> bfloat16 bits, rounded once: to nearest even (a
    GPU's ``cvt.rn.bf16``), or toward zero (``cvt.rz``; a value past the largest gives the largest).
    A NaN is quiet, a signalling one too: 0x7FFF from float16 and float32 (:func:`to_bits`); from
    float64, its sign and top bits (0x7FC0 for the usual NaN, as an H200 gives)."""
    values = np.asarray(values)
    if values.dtype in (np.float16, np.float32):
        bits = to_bits(values.astype(np.float32))  # the widening is exact
    else:
        # float64 (or an integer, exact in it below 2**53) to float32 rounded to odd: toward zero,
        # its last bit set where that was inexact. Rounding that to bfloat16 (16 bits fewer) gives
        # the float64 value rounded once; a plain float32 rounding first could round twice.
        wide = values.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf; a signalling NaN
            single = wide.astype(np.float32)
        inexact = (single != wide) & ~np.isnan(wide)
        odd = _toward_zero(single.view(np.uint32), single, wide) | inexact.astype(np.uint32)
        quiet_nan = (odd >> np.uint32(16)) | np.uint32(0x0040)
        bits = np.where(np.isnan(wide), quiet_nan, to_bits(odd.view(np.float32))).astype(np.uint16)
    bits = bits.reshape(values.shape)
    return _toward_zero(bits, to_float32(bits), values) if toward_zero else bits


def _toward_zero(bits: np.ndarray, rounded: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Step a rounded-to-nearest float (its ``bits`` and value) one unit toward zero where it
    landed farther from zero than ``exact``: the round-toward-zero result (+inf steps to the largest)."""
    with np.errstate(invalid="ignore"):  # a signalling NaN, which compares False like any NaN
        away = np.abs(rounded.astype(np.float64)) > np.abs(exact.astype(np.float64))
    return bits - away.astype(bits.dtype)


def _is_bf16(handle) -> bool:
    # The bits as well as the type: Triton's own comparisons label booleans with the operands' type.
    return (getattr(handle, "dtype", None) is not None and handle.dtype.scalar == _BFLOAT16
            and handle.data.dtype == np.uint16)


def _widen(handle) -> np.ndarray:
    return to_float32(handle.data) if _is_bf16(handle) else handle.data


def _narrow(values: np.ndarray) -> np.ndarray:
    """A float32 result back to bfloat16 bits; comparisons (bool) and integers pass through."""
    return to_bits(values) if np.asarray(values).dtype == np.float32 else values


def _result(values: np.ndarray, dtype):
    """A handle for a widened operation's result; a comparison's booleans are int1, as the kernel's
    types say (labelled bfloat16, they would go through the widening again in ``(x < y) & mask``)."""
    out = _narrow(values)
    return _TensorHandle(out, _INT1 if np.asarray(out).dtype == np.bool_ else dtype)


def _replace(cls, name: str, make) -> None:
    original = cls.__dict__[name]
    if getattr(original, _PATCHED, False):
        return
    replacement = make(original)
    setattr(replacement, _PATCHED, True)
    setattr(cls, name, replacement)


def _binary_op(original):
    @functools.wraps(original)
    def binary_op(self, lhs, rhs, op):
        if not (_is_bf16(lhs) or _is_bf16(rhs)):
            handle = original(self, lhs, rhs, op)
            if handle.data.dtype == np.bool_:  # a comparison of any type: int1, not its operands' type
                handle.dtype = _INT1
            return handle
        return _result(op(_widen(lhs), _widen(rhs)), lhs.dtype.scalar)

    return binary_op


def _unary_op(original):
    @functools.wraps(original)
    def unary_op(self, arg, op):
        if not _is_bf16(arg):
            return original(self, arg, op)
        return _result(op(_widen(arg)), arg.dtype.scalar)

    return unary_op


def _ternary_op(original):
    @functools.wraps(original)
    def ternary_op(self, lhs, rhs, other, op):
        # A select (np.where) moves bits and is right as it is; a clamp (np.clip) compares.
        if op is np.where or not _is_bf16(other):
            return original(self, lhs, rhs, other, op)
        return _result(op(_widen(lhs), _widen(rhs), _widen(other)), other.dtype.scalar)

    return ternary_op


def _create_fma(original):
    @functools.wraps(original)
    def create_fma(self, x, y, z):
        if not _is_bf16(z):
            return original(self, x, y, z)
        # In float64 the product is exact and the sum nearly so: one rounding, as fma.rn.bf16.
        exact = np.add(np.multiply(_widen(x), _widen(y), dtype=np.float64), _widen(z), dtype=np.float64)
        return _TensorHandle(to_bits(exact.astype(np.float32)), z.dtype.scalar)

    return create_fma


def _create_dot(original):
    @functools.wraps(original)
    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if not (_is_bf16(a) or _is_bf16(b)):
            return original(self, a, b, d, input_precision, max_num_imprecise_acc)
        out = np.matmul(_widen(a), _widen(b), dtype=np.float32) + _widen(d)
        return _TensorHandle(_narrow(out) if _is_bf16(d) else out.astype(d.data.dtype), d.dtype.scalar)

    return create_dot


def _cast_impl(original):
    @functools.wraps(original)
    def cast_impl(self, src, dst_type):
        # Triton reads bfloat16 through a float conversion of its own that truncates a narrowing,
        # turns float64 into integer bits and mangles subnormals when widening.
        if dst_type.scalar == _BFLOAT16 and not _is_bf16(src):
            return _TensorHandle(cast_to_bits(src.data), dst_type.scalar)
        if _is_bf16(src) and dst_type.scalar != _BFLOAT16:
            return original(self, _TensorHandle(to_float32(src.data), _FLOAT32), dst_type)
        return original(self, src, dst_type)

    return cast_impl


def _create_fp_to_fp(original):
    @functools.wraps(original)
    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        # tensor.to(fp_downcast_rounding="rtz") and float16 -> bfloat16; float8 stays as Triton has it.
        dst, toward_zero = dst_type.scalar, rounding_mode == _RTZ
        if src.data.dtype not in (np.float16, np.float32, np.float64):
            return original(self, src, dst_type, rounding_mode)
        if dst == _BFLOAT16:
            return _TensorHandle(cast_to_bits(src.data, toward_zero=toward_zero), dst)
        if dst == _FLOAT16 and toward_zero:  # Triton's own overflows to NaN
            with np.errstate(over="ignore", invalid="ignore"):
                rounded = src.data.astype(np.float16)
            bits = _toward_zero(rounded.view(np.uint16), rounded, src.data)
            # cvt.rz.f16.f32 gives the canonical NaN, as cvt.rn.bf16.f32 does (measured on an H200).
            return _TensorHandle(np.where(np.isnan(src.data), np.uint16(0x7FFF), bits).view(np.float16), dst)
        return original(self, src, dst_type, rounding_mode)

    return create_fp_to_fp


def _sum(original):
    @functools.wraps(original)
    def sum(self, input):  # noqa: A001 (the interpreter's name)
        if _is_bf16(input.handle):
            return self.to_tensor(tree_sum(input.handle.data, self.axis, self.keep_dims), input.dtype)
        if input.handle.data.dtype == np.float16:  # numpy's float16 sum accumulates in float32
            return self.to_tensor(half_tree_sum(input.handle.data, self.axis, self.keep_dims), input.dtype)
        return original(self, input)

    return sum


def tree_sum(bits: np.ndarray, axis: int | None, keepdims: bool) -> np.ndarray:
    """The bfloat16 sum of ``bits`` along ``axis`` as a GPU adds: a tree of pairwise sums, each
    rounded to bfloat16 (a sum in float32 rounded once would hide what bfloat16 partial sums lose).
    A sum over every axis is a 0-d array, as the compiled reduction's result is a scalar."""
    total = _tree(to_float32(bits), axis, keepdims, lambda values: to_float32(to_bits(values)))
    return to_bits(total).reshape(total.shape)  # to_bits makes a 0-d array 1-d


def half_tree_sum(values: np.ndarray, axis: int | None, keepdims: bool) -> np.ndarray:
    """The float16 sum of ``values`` as a GPU adds it, in float16: :func:`tree_sum`'s tree."""
    narrow = lambda wide: wide.astype(np.float16).astype(np.float32)  # noqa: E731 (each sum rounded once)
    with np.errstate(over="ignore"):  # past 65504 a sum is inf, as on the GPU
        return _tree(values.astype(np.float32), axis, keepdims, narrow).astype(np.float16)


def _tree(values: np.ndarray, axis: int | None, keepdims: bool, narrow) -> np.ndarray:
    shape = values.shape
    values = values.reshape(-1) if axis is None else np.moveaxis(values, axis, -1)
    while values.shape[-1] > 1:
        if values.shape[-1] % 2:
            pad = np.full(values.shape[:-1] + (1,), -0.0, dtype=np.float32)  # x + -0.0 == x, -0.0 too
            values = np.concatenate([values, pad], axis=-1)
        values = narrow(values[..., 0::2] + values[..., 1::2])
    total = values[..., 0] if values.shape[-1] else np.full(values.shape[:-1], -0.0, dtype=np.float32)
    if keepdims:
        total = np.reshape(total, (1,) * len(shape)) if axis is None else np.expand_dims(total, axis)
    return np.asarray(total, dtype=np.float32)


def _scan(numpy_scan):
    def make(original):
        @functools.wraps(original)
        def scan(self, input):
            if not _is_bf16(input.handle):
                return original(self, input)
            folded = numpy_scan(to_float32(input.handle.data), axis=self.axis, dtype=np.float32)
            return [self.to_tensor(to_bits(folded), dtype=input.dtype)]

        return scan

    return make


def _min_max(original):
    @functools.wraps(original)
    def min_max(self, input, val_reduce_op, idx_reduce_op=None):
        plain = input[0] if isinstance(input, tuple) else input
        if not _is_bf16(plain.handle) or val_reduce_op is None:
            return original(self, input, val_reduce_op, idx_reduce_op)
        # The bits of the extreme value are the answer: reduce the widened values, narrow exactly.
        widen = lambda data, **kw: to_bits(val_reduce_op(to_float32(data), **kw))  # noqa: E731
        return original(self, input, widen,
                        None if idx_reduce_op is None else (lambda data, **kw: idx_reduce_op(to_float32(data), **kw)))

    return min_max


def install() -> bool:
    """Route the interpreter's bfloat16 arithmetic and conversions through these versions; idempotent.

    Returns False (and changes nothing) for a Triton whose interpreter lacks the methods read
    here, so a future layout fails :func:`installed`'s test, not a user's run.
    """
    global _BFLOAT16, _FLOAT16, _FLOAT32, _INT1, _RTZ, _TensorHandle
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder, reduce_ops, scan_ops = interpreter.InterpreterBuilder, interpreter.ReduceOps, interpreter.ScanOps
    wanted = [(builder, "binary_op", _binary_op), (builder, "unary_op", _unary_op),
              (builder, "ternary_op", _ternary_op), (builder, "create_fma", _create_fma),
              (builder, "create_dot", _create_dot), (builder, "cast_impl", _cast_impl),
              (builder, "create_fp_to_fp", _create_fp_to_fp), (reduce_ops, "sum", _sum),
              (reduce_ops, "min_max", _min_max), (scan_ops, "cumsum", _scan(np.cumsum)),
              (scan_ops, "cumprod", _scan(np.cumprod))]
    if (not all(name in cls.__dict__ for cls, name, _ in wanted) or not hasattr(interpreter, "TensorHandle")
            or not hasattr(getattr(getattr(interpreter, "_ir", None), "ROUNDING_MODE", None), "RTZ")):
        return False
    _BFLOAT16, _FLOAT16, _FLOAT32, _INT1 = tl.bfloat16, tl.float16, tl.float32, tl.int1
    _RTZ, _TensorHandle = interpreter._ir.ROUNDING_MODE.RTZ, interpreter.TensorHandle
    for cls, name, make in wanted:
        _replace(cls, name, make)
    # The builder's one-line ops (``create_fadd = lambda self, a, b: self.binary_op(a, b, np.add)``,
    # ``create_fp_trunc`` and ``create_fp_ext`` calling ``self.cast_impl``, and the rest) look them
    # up at call time, so they reach the replacements unchanged.
    return True


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    return all(getattr(cls.__dict__.get(name), _PATCHED, False)
               for cls, name in [(interpreter.InterpreterBuilder, "binary_op"), (interpreter.ReduceOps, "sum"),
                                 (interpreter.ScanOps, "cumsum"), (interpreter.InterpreterBuilder, "cast_impl")])
