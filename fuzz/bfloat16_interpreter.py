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
elementwise results are the GPU's, bit for bit. ``tl.sum`` of bfloat16 adds in a tree of pairwise
sums, each rounded to bfloat16, as a GPU's partial sums are (the order of the pairs is not the
GPU's, so the last bits may differ, not the size of the error). Scans (``tl.cumsum``) fold in
float32 and round once. Only bfloat16 changes; float8 types (also kept as bits) and atomics on
bfloat16 are left as Triton has them.

Light on purpose, like :mod:`fuzz.autotune`: standard library, numpy and Triton only, because it
runs in the isolated worker. It replaces methods on the interpreter's classes (idempotent), so it
holds for kernels decorated before or after it runs; on a GPU the interpreter is never called and
nothing changes.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["install", "installed", "to_bits", "to_float32", "tree_sum"]

_PATCHED = "_lse_fuzz_bfloat16"  # marks a replacement, so install() is idempotent
# Set by install(), not at import: importing Triton before the interpreter is chosen would build
# its library functions for the wrong mode (reference._device), and every operation reads these.
_BFLOAT16 = None
_TensorHandle = None


def to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> their float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_bits(values: np.ndarray) -> np.ndarray:
    """float32 values -> bfloat16 bit patterns (uint16), rounded to nearest even; NaN stays NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    # Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry past the largest finite
    # value reaches the exponent's all-ones pattern, infinity, as the GPU's conversion does.
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(values)
    return np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x0040), rounded).astype(np.uint16)


def _is_bf16(handle) -> bool:
    return getattr(handle, "dtype", None) is not None and handle.dtype.scalar == _BFLOAT16


def _widen(handle) -> np.ndarray:
    return to_float32(handle.data) if _is_bf16(handle) else handle.data


def _narrow(values: np.ndarray) -> np.ndarray:
    """A float32 result back to bfloat16 bits; comparisons (bool) and integers pass through."""
    return to_bits(values) if np.asarray(values).dtype == np.float32 else values


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
            return original(self, lhs, rhs, op)
        return _TensorHandle(_narrow(op(_widen(lhs), _widen(rhs))), lhs.dtype.scalar)

    return binary_op


def _unary_op(original):
    @functools.wraps(original)
    def unary_op(self, arg, op):
        if not _is_bf16(arg):
            return original(self, arg, op)
        return _TensorHandle(_narrow(op(_widen(arg))), arg.dtype.scalar)

    return unary_op


def _ternary_op(original):
    @functools.wraps(original)
    def ternary_op(self, lhs, rhs, other, op):
        # A select (np.where) moves bits and is right as it is; a clamp (np.clip) compares.
        if op is np.where or not _is_bf16(other):
            return original(self, lhs, rhs, other, op)
        return _TensorHandle(_narrow(op(_widen(lhs), _widen(rhs), _widen(other))), other.dtype.scalar)

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


def _sum(original):
    @functools.wraps(original)
    def sum(self, input):  # noqa: A001 (the interpreter's name)
        if not _is_bf16(input.handle):
            return original(self, input)
        return self.to_tensor(tree_sum(input.handle.data, self.axis, self.keep_dims), input.dtype)

    return sum


def tree_sum(bits: np.ndarray, axis: int | None, keepdims: bool) -> np.ndarray:
    """The bfloat16 sum of ``bits`` along ``axis`` as a GPU adds: a tree of pairwise sums, each
    rounded to bfloat16 (a sum in float32 rounded once would hide what bfloat16 partial sums lose)."""
    values = to_float32(bits)
    shape = values.shape
    values = values.reshape(-1) if axis is None else np.moveaxis(values, axis, -1)
    while values.shape[-1] > 1:
        if values.shape[-1] % 2:
            pad = np.full(values.shape[:-1] + (1,), -0.0, dtype=np.float32)  # x + -0.0 == x, -0.0 too
            values = np.concatenate([values, pad], axis=-1)
        values = to_float32(to_bits(values[..., 0::2] + values[..., 1::2]))
    total = values[..., 0] if values.shape[-1] else np.full(values.shape[:-1], -0.0, dtype=np.float32)
    if keepdims:
        total = np.reshape(total, (1,) * len(shape)) if axis is None else np.expand_dims(total, axis)
    return to_bits(total)


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
    """Route the interpreter's bfloat16 arithmetic through the widening versions; idempotent.

    Returns False (and changes nothing) for a Triton whose interpreter lacks the methods read
    here, so a future layout fails :func:`installed`'s test, not a user's run.
    """
    global _BFLOAT16, _TensorHandle
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder, reduce_ops, scan_ops = interpreter.InterpreterBuilder, interpreter.ReduceOps, interpreter.ScanOps
    wanted = [(builder, "binary_op", _binary_op), (builder, "unary_op", _unary_op),
              (builder, "ternary_op", _ternary_op), (builder, "create_fma", _create_fma),
              (builder, "create_dot", _create_dot), (reduce_ops, "sum", _sum),
              (reduce_ops, "min_max", _min_max), (scan_ops, "cumsum", _scan(np.cumsum)),
              (scan_ops, "cumprod", _scan(np.cumprod))]
    if not all(name in cls.__dict__ for cls, name, _ in wanted) or not hasattr(interpreter, "TensorHandle"):
        return False
    _BFLOAT16, _TensorHandle = tl.bfloat16, interpreter.TensorHandle
    for cls, name, make in wanted:
        _replace(cls, name, make)
    # The builder's one-line ops (``create_fadd = lambda self, a, b: self.binary_op(a, b, np.add)``
    # and the rest) look binary_op up at call time, so they reach the replacement unchanged.
    return True


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    return all(getattr(cls.__dict__.get(name), _PATCHED, False)
               for cls, name in [(interpreter.InterpreterBuilder, "binary_op"), (interpreter.ReduceOps, "sum"),
                                 (interpreter.ScanOps, "cumsum")])
