"""Where Triton's interpreter and a GPU compute differently: the operations of an LSE kernel, on edge values.

    python bench/interpreter_diff.py run --device cpu --out cpu.json    # the interpreter, as the fuzzer runs it
    python bench/interpreter_diff.py run --device cuda --out gpu.json   # the same kernels, compiled
    python bench/interpreter_diff.py compare cpu.json gpu.json --out table.md

A case is one launch of a tiny kernel (one program, 16 to 256 lanes) on edge values: NaN (a
signalling one too), infinities, signed zeros, subnormals, the largest finite value, values that
overflow or tie when narrowed, int32 values that wrap. ``run`` records each case's output bits and
what it ran on; on the CPU it turns the interpreter on before importing Triton and installs
:mod:`fuzz.interpreter.bfloat16`, as the fuzzer does. A missing API makes a case absent, an
exception its error. ``compare`` classes each case by its worst lane (Verdict), and holds the exp,
log and sqrt sweeps of both sides against float64 torch. See docs/interpreter.md.
"""

from __future__ import annotations

import argparse
import datetime
import enum
import fnmatch
import functools
import gzip
import importlib
import inspect
import json
import os
import platform
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FORMAT = "lse-fuzz interpreter-diff 1"
triton = tl = torch = None  # set by _import_triton once TRITON_INTERPRET is decided: Triton reads it at import
libdevice = tl_libdevice = log1p_alias = to_dtype = None  # likewise: libdevice, and the aliases kernels bind it to
# The fuzzer's repairs of the interpreter, installed on the CPU as the fuzzer installs them (with bfloat16's).
REPAIRS = ("constants", "numpy_compat", "pace", "frontend", "libdevice", "kernel_globals")
NAN, INF = float("nan"), float("inf")
HALF = ("float16", "bfloat16")
WIDTH = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64, "int8": 8, "int32": 32, "int64": 64}
# (smallest subnormal, largest subnormal, smallest normal, largest finite, machine epsilon)
LIMITS = {"float16": (2.0**-24, 2.0**-14 - 2.0**-24, 2.0**-14, 65504.0, 2.0**-10),
          "bfloat16": (2.0**-133, 2.0**-126 - 2.0**-133, 2.0**-126, 3.3895313892515355e38, 2.0**-7),
          "float32": (2.0**-149, 2.0**-126 - 2.0**-149, 2.0**-126, 3.4028234663852886e38, 2.0**-23),
          "float64": (5e-324, 2.0**-1022 - 2.0**-1074, 2.0**-1022, 1.7976931348623157e308, 2.0**-52)}


# Kernels: plain functions until _import_triton jits them. Each picks its operation from a chain
# of conditional expressions, one line per OP; a constexpr condition traces only the line chosen,
# compiled or interpreted, so an API absent from this Triton is never looked up unless asked for.

def _unary_kernel(x_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr, ROUNDING: tl.constexpr = None):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    y = (x if OP == "copy" else
         tl.load(x_ptr + offsets, mask=offsets < BLOCK // 2, other=float("-inf")) if OP == "masked_load" else
         -x if OP == "neg" else
         tl.abs(x) if OP == "abs" else
         (x != x).to(tl.int8) if OP == "is_nan" else
         (x > 0).to(tl.int8) if OP == "gt_zero" else
         tl.exp(x) if OP == "exp" else
         tl.exp2(x) if OP == "exp2" else
         tl.exp2(x * 1.4426950408889634) if OP == "exp_via_exp2" else  # what fast LSE kernels write
         tl.math.fast_expf(x) if OP == "fast_expf" else
         tl.log(x) if OP == "log" else
         tl.log2(x) if OP == "log2" else
         tl.sqrt(x) if OP == "sqrt" else
         tl.sqrt_rn(x) if OP == "sqrt_rn" else
         tl.rsqrt(x) if OP == "rsqrt" else
         x.to(out_ptr.dtype.element_ty, fp_downcast_rounding=ROUNDING) if OP == "cast" else
         libdevice.log1p(x) if OP == "ld_log1p" else  # libdevice: what merge and cross-entropy kernels call
         libdevice.expm1(x) if OP == "ld_expm1" else
         libdevice.exp(x) if OP == "ld_exp" else
         libdevice.exp2(x) if OP == "ld_exp2" else
         libdevice.log(x) if OP == "ld_log" else
         libdevice.log2(x) if OP == "ld_log2" else
         libdevice.log10(x) if OP == "ld_log10" else
         libdevice.tanh(x) if OP == "ld_tanh" else
         libdevice.rsqrt(x) if OP == "ld_rsqrt" else
         libdevice.sqrt(x) if OP == "ld_sqrt" else
         libdevice.fast_expf(x) if OP == "ld_fast_expf" else
         libdevice.fast_logf(x) if OP == "ld_fast_logf" else
         libdevice.isnan(x).to(tl.int32) if OP == "ld_isnan" else
         libdevice.isinf(x).to(tl.int32) if OP == "ld_isinf" else
         libdevice.signbit(x) if OP == "ld_signbit" else
         tl_libdevice.log1p(x) if OP == "log1p_module_alias" else  # the import forms of training libraries
         log1p_alias(x) if OP == "log1p_function_alias" else
         to_dtype(to_dtype(x, tl.float64), x.dtype) if OP == "cast_alias" else
         # a sum in the input's type, to one element, tested as LSE kernels test it: (m == inf) & (s == s)
         (((tl.max(x, axis=0) == float("inf")) & (tl.sum(x, axis=0, dtype=x.dtype) == tl.sum(x, axis=0, dtype=x.dtype)))
          | (offsets < 0)).to(tl.int8) if OP == "sum_scalar_flag" else None)
    tl.static_assert(y.dtype == out_ptr.dtype.element_ty, "the case's out_dtype is wrong")
    tl.store(out_ptr + offsets, y)


def _binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    z = (x + y if OP == "add" else
         x - y if OP == "sub" else
         x * y if OP == "mul" else
         x * y - x * y if OP == "mul_sub_same" else  # 0 unless a compiler contracts one product into an fma
         x / y if OP == "div" else
         tl.div_rn(x, y) if OP == "div_rn" else
         tl.fdiv(x, y) if OP == "fdiv" else
         tl.fdiv(x, y, ieee_rounding=True) if OP == "fdiv_ieee" else
         tl.maximum(x, y) if OP == "maximum" else
         tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL) if OP == "maximum_nan_all" else
         tl.minimum(x, y) if OP == "minimum" else
         tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL) if OP == "minimum_nan_all" else
         tl.where(x < y, x, y) if OP == "where_lt" else  # a hand-written minimum: NaN on either side picks y
         tl.where(x, x, y) if OP == "where_float_cond" else  # a float condition: NaN != 0 counts as true
         ((x < y) & (offsets < BLOCK // 2)).to(tl.int8) if OP == "lt_and_mask" else  # as a masked max does
         (x < y).to(tl.int8) if OP == "lt" else
         (x > y).to(tl.int8) if OP == "gt" else
         (x == y).to(tl.int8) if OP == "eq" else
         (x != y).to(tl.int8) if OP == "ne" else
         x // y if OP == "floordiv" else  # int32 index math from here on; // and % round toward zero, as C
         x % y if OP == "mod" else
         offsets * y if OP == "arange_mul" else  # a row offset, row * row_stride, in int32
         x.to(tl.int64) * y if OP == "mul_int64" else None)  # the fix: widen before multiplying
    tl.static_assert(z.dtype == out_ptr.dtype.element_ty, "the case's out_dtype is wrong")
    tl.store(out_ptr + offsets, z)


# Combine functions: a reduction's NaN policy is its combine function's.
def _max_nan_none(a, b): return tl.maximum(a, b, propagate_nan=tl.PropagateNan.NONE)
def _max_nan_all(a, b): return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
def _min_nan_none(a, b): return tl.minimum(a, b, propagate_nan=tl.PropagateNan.NONE)
def _min_nan_all(a, b): return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


def _argmax_left(value1, index1, value2, index2):  # tl.argmax's combine (_argmax_combine_tie_break_left)
    greater = (value1 > value2) | ((value1 == value2) & (index1 < index2))
    return tl.where(greater, value1, value2), tl.where(greater, index1, index2)


def _lse(x):  # the reference kernel's formula, in float32
    xf = x.to(tl.float32)
    row_max = tl.max(xf, axis=1)
    return row_max + tl.log(tl.sum(tl.exp(xf - row_max[:, None]), axis=1))


def _reduce_kernel(x_ptr, out_ptr, OP: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.arange(0, ROWS)
    x = tl.load(x_ptr + rows[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
    index = tl.broadcast_to(tl.arange(0, BLOCK)[None, :], (ROWS, BLOCK))
    r = (tl.max(x, axis=1) if OP == "max" else  # widens 16-bit floats to float32 first
         tl.min(x, axis=1) if OP == "min" else
         tl.sum(x, axis=1) if OP == "sum" else  # in the input's type, as dtype=x.dtype
         tl.sum(x, axis=1, dtype=tl.float32) if OP == "sum_float32" else
         tl.argmax(x, axis=1) if OP == "argmax" else
         tl.argmin(x, axis=1) if OP == "argmin" else
         tl.reduce((x, index), 1, _argmax_left)[1] if OP == "reduce_argmax_fold" else  # no interpreter shortcut
         tl.reduce(x, 1, _max_nan_none) if OP == "reduce_max_nan_none" else
         tl.reduce(x, 1, _max_nan_all) if OP == "reduce_max_nan_all" else
         tl.reduce(x, 1, _min_nan_none) if OP == "reduce_min_nan_none" else
         tl.reduce(x, 1, _min_nan_all) if OP == "reduce_min_nan_all" else
         _lse(x) if OP == "lse" else None)
    tl.static_assert(r.dtype == out_ptr.dtype.element_ty, "the case's out_dtype is wrong")
    tl.store(out_ptr + rows, r)


KERNELS = {"unary": "_unary_kernel", "binary": "_binary_kernel", "reduce": "_reduce_kernel"}
HELPERS = ("_max_nan_none", "_max_nan_all", "_min_nan_none", "_min_nan_all", "_argmax_left", "_lse")


def _import_triton(device: str) -> dict:
    """Import torch and Triton in the mode ``device`` asks for, jit the kernels; the run's metadata."""
    global triton, tl, torch
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported (reference._device says why)
    elif os.environ.get("TRITON_INTERPRET", "0") == "1":
        raise SystemExit("interpreter_diff run: --device cuda, but TRITON_INTERPRET=1 is set: unset it")
    torch, triton, tl, bfloat16_fix = (importlib.import_module(name) for name in (
        "torch", "triton", "triton.language", "fuzz.interpreter.bfloat16"))
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("interpreter_diff run: --device cuda, but torch sees no CUDA device")
    fixed = bfloat16_fix.install() if device == "cpu" else False
    repairs = [name for name in REPAIRS if importlib.import_module(f"fuzz.interpreter.{name}").install()] if device == "cpu" else []
    extra = importlib.import_module("triton.language.extra.libdevice")
    # The module alias, function alias and builtin alias the names/ cases reach libdevice and tl.cast by.
    globals().update(libdevice=extra, tl_libdevice=extra, log1p_alias=extra.log1p, to_dtype=tl.cast)
    for name in HELPERS + tuple(KERNELS.values()):
        globals()[name] = triton.jit(globals()[name])
    return {"date": datetime.date.today().isoformat(),
            "device": "CPU, Triton interpreter" if device == "cpu" else torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "numpy": np.__version__, "interpreter": os.environ.get("TRITON_INTERPRET") == "1",
            "bfloat16_fix": bool(fixed), "repairs": repairs}


# ----- the cases -----

@dataclass(frozen=True)
class Bits:
    pattern: int  # a float lane given by its bits: a signalling NaN survives no float conversion


@dataclass(frozen=True)
class Case:
    id: str
    kernel: str  # a KERNELS key
    op: str
    dtype: str  # of the inputs
    out_dtype: str
    inputs: tuple  # one list of values per operand
    rows: tuple = ()  # reduce: one label per row
    rounding: str | None = None  # cast: fp_downcast_rounding
    tolerance_ulps: int = 1
    needs: tuple = ()  # APIs looked up first; a missing one makes the case absent
    reference: str = ""  # sweeps: the torch function whose float64 result, rounded, is exact


UNARY = ("copy", "masked_load", "neg", "abs", "is_nan", "gt_zero")
MATH = {"float32": ("exp", "exp2", "exp_via_exp2", "fast_expf", "log", "log2", "sqrt", "sqrt_rn", "rsqrt"),
        "float64": ("exp", "exp2", "log", "log2", "sqrt", "rsqrt")}
SWEEPS = {"float32": ("exp", "exp2", "exp_via_exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt"),
          "float64": ("exp", "exp2", "log", "log2")}
LIBDEVICE = {"float32": ("ld_log1p", "ld_expm1", "ld_exp", "ld_exp2", "ld_log", "ld_log2", "ld_log10", "ld_tanh",
                         "ld_rsqrt",
                         "ld_sqrt", "ld_fast_expf", "ld_fast_logf", "ld_isnan", "ld_isinf", "ld_signbit"),
             "float64": ("ld_log1p", "ld_expm1", "ld_exp", "ld_exp2", "ld_log", "ld_log2", "ld_tanh", "ld_rsqrt",
                         "ld_sqrt", "ld_isnan", "ld_isinf", "ld_signbit")}
LIBDEVICE_SWEEPS = ("ld_log1p", "ld_expm1", "ld_exp", "ld_exp2", "ld_log", "ld_log2", "ld_log10", "ld_tanh",
                    "ld_fast_expf", "ld_fast_logf")
NAMES = ("log1p_module_alias", "log1p_function_alias", "cast_alias")
REFERENCE = {"exp_via_exp2": "exp", "sqrt_rn": "sqrt", "ld_fast_expf": "exp", "ld_fast_logf": "log"}
# otherwise torch's function of the same name (without ld_)
BINARY = ("add", "sub", "mul", "mul_sub_same", "div", "div_rn", "fdiv", "fdiv_ieee", "maximum", "maximum_nan_all",
          "minimum", "minimum_nan_all", "where_lt", "where_float_cond", "lt_and_mask", "lt", "gt", "eq", "ne")
REDUCE = ("max", "min", "sum", "argmax", "argmin", "reduce_argmax_fold", "reduce_max_nan_none", "reduce_max_nan_all",
          "reduce_min_nan_none", "reduce_min_nan_all", "lse")
INDEX = (("add", 1), ("mul", 2**28), ("arange_mul", 2**28), ("mul_int64", 2**28), ("floordiv", -3), ("mod", -3))
NEEDS = {"fast_expf": "tl.math.fast_expf", "sqrt_rn": "tl.sqrt_rn", "div_rn": "tl.div_rn", "fdiv": "tl.fdiv",
         "fdiv_ieee": "tl.fdiv", "nan_": "tl.PropagateNan", "rounding": "fp_downcast_rounding"}  # op (part) -> API
OUT_DTYPE = {**dict.fromkeys(("is_nan", "gt_zero", "lt_and_mask", "lt", "gt", "eq", "ne", "sum_scalar_flag"), "int8"),
             **dict.fromkeys(("ld_isnan", "ld_isinf", "ld_signbit"), "int32"), "sum_float32": "float32",
             **dict.fromkeys(("argmax", "argmin", "reduce_argmax_fold"), "int32"), "mul_int64": "int64",
             **dict.fromkeys(("max", "min", "lse"), "float32")}  # tl.max and tl.min widen 16-bit floats
APPROXIMATE = {"exp", "exp2", "exp_via_exp2", "fast_expf", "log", "log2", "sqrt", "rsqrt", "div", "fdiv", "lse",
               "ld_exp", "ld_exp2", "ld_log10", "ld_tanh", "ld_rsqrt", "ld_fast_expf", "ld_fast_logf"}  # CUDA's 2-ulp functions
# float32 values that overflow, tie or underflow when narrowed, and that leave int32's range.
F32_CAST = [NAN, Bits(0x7F800001), INF, -INF, -0.0, 0.0, 2.0**-149, 2.0**-126, 3.4028234663852886e38, 3.4e38,
            3.3895313892515355e38, 1.0, -1.0, 70000.0, 65504.0, 65519.99609375, 65520.0, 2.0**-24, 2.0**-25,
            1.5 * 2.0**-25, 2.0**-14, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 3 * 2.0**-8),
            1 + 2.0**-8 + 2.0**-20, 2.5, -2.5, 2.0**31, -2.0**31 - 256, 1e10]
F64_CAST = [NAN, INF, -INF, -0.0, 0.0, 5e-324, 2.0**-149, 2.0**-150, 1.5 * 2.0**-150, 2.0**-133, 2.0**-134,
            3.4028234663852886e38, 3.4028235677973366e38, 1e39, 3.4e38, 1 + 2.0**-24, 1 + 3 * 2.0**-24, 1 + 2.0**-8,
            1 + 3 * 2.0**-8, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 70000.0, 65520.0, 2.0**-25, 1.0, -1.0, 1.0 / 3.0, 1e-300,
            -1e-300, 1e300, 2.0**31, -2.5]
CASTS = [("float32", F32_CAST, "float16 float16_rtne float16_rtz bfloat16 bfloat16_rtne bfloat16_rtz float64 int32"
                               " int64"),  # source, its values, the targets (a suffix is fp_downcast_rounding)
         ("float64", F64_CAST, "float32 float32_rtz float16 bfloat16 int32"),
         ("float16", None, "float32 float64 bfloat16 int32"), ("bfloat16", None, "float32 float64 float16 int32")]
INT32_VALUES = [0, 1, 2, 3, 7, 8, 15, -1, -2, -7, 2**31 - 1, -2**31, 2**30, 2**24 + 1, 123456789, -123456789]


def _edges(dtype: str) -> list:
    sub_min, sub_max, normal_min, top, _ = LIMITS[dtype]
    return [NAN, INF, -INF, -0.0, 0.0, sub_min, sub_max, normal_min, top, -top, 1.0, -1.0, -sub_min, 0.5, -2.5, 100.0]


def _pairs(dtype: str) -> tuple[list, list]:
    sub_min, sub_max, normal_min, top, eps = LIMITS[dtype]
    pairs = [(NAN, 1.0), (1.0, NAN), (NAN, NAN), (NAN, -INF), (-INF, NAN), (INF, -INF), (-INF, INF), (INF, INF),
             (-INF, -INF), (INF, 1.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.0, -1.0), (1.0, 1.0), (top, top),
             (-top, -top), (top, -top), (top, 2.0), (sub_min, sub_min), (sub_min, 0.5), (normal_min, 0.5),
             (sub_max, normal_min), (1.0, 3.0), (2.0, 3.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (INF, 0.0),
             (1.0, eps / 2), (1.0 + eps, 1.0 + eps), (1.0 / 3.0, 3.0)]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _reduce_blocks(dtype: str) -> dict:
    """name -> (row labels, rows of 16): NaN at several lanes, infinities, NaN rows, finite rows."""
    base = [lane * 0.5 - 3.0 for lane in range(16)]  # -3 .. 4.5, exact in every dtype

    def row(fill=None, **lanes):
        return [lanes.get(f"l{i}", base[i] if fill is None else fill) for i in range(16)]

    top = LIMITS[dtype][3]
    return {"nan_lanes": (("NaN at lane 0", "NaN at lane 7", "NaN at lane 15", "NaN at 3, +inf at 8, NaN at 12"),
                          [row(l0=NAN), row(l7=NAN), row(l15=NAN), row(l3=NAN, l8=INF, l12=NAN)]),
            "infinities": (("all -inf", "+inf and -inf alternating", "-inf but 1.0 at lane 9", "+inf at 0 and 5"),
                           [row(-INF), [(-INF, INF)[i % 2] for i in range(16)], row(-INF, l9=1.0),
                            row(l0=INF, l5=INF)]),
            "mostly_nan": (("NaN but -inf at lane 4", "NaN but 2.0 at lane 10", "NaN and +inf alternating",
                            "NaN but -0.0 at lane 0"),
                           [row(NAN, l4=-INF), row(NAN, l10=2.0), [(NAN, INF)[i % 2] for i in range(16)],
                            row(NAN, l0=-0.0)]),
            "all_nan": (("all NaN",), [row(NAN)]),  # alone: numpy's nanargmax refuses it, failing the whole case
            "finite": (("-3 .. 4.5 ascending", "4.5 at lanes 3 and 11", "-0.0 but +0.0 at lane 5",
                        "largest finite at lanes 2 and 9"),
                       [base, row(l3=4.5, l11=4.5, l15=1.0), row(-0.0, l5=0.0), row(1.0, l2=top, l9=top)])}


def _finite_row(dtype: str, size: int) -> list:
    """Values in (0, 1], exact in every dtype, whose sum in a 16-bit type rounds at every level."""
    return [((lane * 37) % 97 + 1) / 128.0 for lane in range(size)]


def _sweep(op: str, dtype: str) -> list:
    op = {"ld_fast_expf": "exp", "ld_fast_logf": "log"}.get(op, op.removeprefix("ld_"))
    if op in ("tanh", "expm1", "log1p"):  # tiny, where they part from their naive forms, to where they saturate
        magnitudes = np.geomspace(1e-30, 0.9 if op == "log1p" else 30.0, 128)
        return list(np.concatenate([-magnitudes[::-1], magnitudes]))
    if op.startswith("exp"):  # from below the smallest subnormal result to above the largest finite one
        low, high = {"exp2": (-160.0, 135.0), "exp": (-110.0, 95.0)}["exp2" if op == "exp2" else "exp"]
        return list(np.linspace(low, high, 256) * (7.8 if dtype == "float64" else 1.0))
    powers = np.linspace(*((-1074.0, 1023.9) if dtype == "float64" else (-149.0, 127.9)), 192)  # subnormals too
    return list(2.0**powers) + list(1.0 + np.linspace(-2.0**-6, 2.0**-6, 64))  # and around 1, where log is 0


def _case(kernel: str, op: str, dtype: str, inputs: tuple, *, group: str = "", target: str | None = None,
          rounding: str | None = None, sweep: bool = False, **fields) -> Case:
    name = f"to_{target}" + (f"_{rounding}" if rounding else "") if op == "cast" else op
    prefix = "sweep" if sweep else "cast" if op == "cast" else kernel
    # A division computes 16-bit floats in float32 (the semantic layer's div_or_mod promotion).
    out_dtype = target or OUT_DTYPE.get(op) or ("float32" if "div" in op and dtype in HALF else dtype)
    needs = tuple(api for part, api in NEEDS.items()
                  if (part in op and not op.startswith("ld_")) or (part == "rounding" and rounding))
    return Case("/".join(p for p in (prefix, name, dtype, group) if p), kernel, op, dtype, out_dtype, inputs,
                rounding=rounding, needs=needs, tolerance_ulps=2 if op in APPROXIMATE else 1,
                reference=REFERENCE.get(op, op.removeprefix("ld_")) if sweep else "", **fields)


def all_cases() -> list[Case]:
    cases = []
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        cases += [_case("unary", op, dtype, (_edges(dtype),)) for op in UNARY + MATH.get(dtype, ())]
        cases += [_case("unary", op, dtype, (_sweep(op, dtype),), sweep=True) for op in SWEEPS.get(dtype, ())]
        cases += [_case("binary", op, dtype, _pairs(dtype)) for op in BINARY if op != "div_rn" or dtype == "float32"]
        cases += [_case("unary", op, dtype, (_edges(dtype),), group="libdevice") for op in LIBDEVICE.get(dtype, ())]
        if dtype == "float32":
            cases += [_case("unary", op, dtype, (_sweep(op, dtype),), sweep=True) for op in LIBDEVICE_SWEEPS]
            cases += [_case("unary", op, dtype, (_edges(dtype),), group="names") for op in NAMES]
        if dtype != "float64":
            cases += [_case("unary", "sum_scalar_flag", dtype, (_finite_row(dtype, 16),))]
            cases += [_case("reduce", op, dtype, (_finite_row(dtype, 256),), group="long_row", rows=("256 values",))
                      for op in ("sum", "sum_float32")]
    for dtype, values, targets in CASTS:
        cases += [_case("unary", "cast", dtype, (values or _edges(dtype),), target=target.split("_")[0],
                        rounding=target.partition("_")[2] or None) for target in targets.split()]
    cases += [_case("binary", op, "int32", (list(range(16)) if op == "arange_mul" else INT32_VALUES, [y] * 16))
              for op, y in INDEX]
    cases += [_case("unary", op, "int32", (INT32_VALUES,)) for op in ("neg", "abs")]
    cases += [_case("unary", "cast", "int32", (INT32_VALUES,), target=target) for target in ("float32", "int64")]
    for dtype in ("float16", "bfloat16", "float32"):
        for group, (labels, rows) in _reduce_blocks(dtype).items():
            cases += [_case("reduce", op, dtype, ([v for row in rows for v in row],), group=group, rows=labels)
                      for op in REDUCE + ("sum_float32",)]
    assert len({case.id for case in cases}) == len(cases), "case ids must be unique"
    return cases


# ----- run -----

def _tensor(values: list, dtype: str, device: str):
    if dtype.startswith("int"):
        return torch.tensor(values, dtype=getattr(torch, dtype), device=device)
    tensor = torch.tensor([0.0 if isinstance(v, Bits) else v for v in values], dtype=torch.float64)
    tensor, width = tensor.to(getattr(torch, dtype)), WIDTH[dtype]
    for lane, value in ((lane, v.pattern) for lane, v in enumerate(values) if isinstance(v, Bits)):
        tensor.view(getattr(torch, f"int{width}"))[lane] = value - (value >> (width - 1) << width)  # signed
    return tensor.to(device)


def _text(value: float | int, dtype: str) -> str:
    """The shortest text that reads back as ``value`` in ``dtype`` (bfloat16 as its float32)."""
    return str(value) if dtype.startswith("int") else str(getattr(np, dtype.replace("bfloat16", "float32"))(value))


def _readable(tensor, dtype: str) -> list[str]:
    return [_text(v, dtype) for v in (tensor.double() if tensor.dtype.is_floating_point else tensor).cpu().tolist()]


def _hex(tensor) -> str:
    return tensor.cpu().contiguous().view(torch.uint8).numpy().tobytes().hex()


def _launch(case: Case, device: str):
    operands = [_tensor(values, case.dtype, device) for values in case.inputs]
    kernel, size = globals()[KERNELS[case.kernel]], operands[0].numel()
    out = torch.empty(len(case.rows) or size, dtype=getattr(torch, case.out_dtype), device=device)
    shape = {"ROWS": len(case.rows), "BLOCK": size // len(case.rows)} if case.rows else {"BLOCK": size}
    kernel[(1,)](*operands, out, OP=case.op, **shape, **({"ROUNDING": case.rounding} if case.kernel == "unary" else {}))
    if device == "cuda":
        torch.cuda.synchronize()
    return operands, out


def _present(api: str) -> bool:  # "tl.math.fast_expf", or a keyword of tensor.to
    if not api.startswith("tl."):
        return api in inspect.signature(tl.tensor.to).parameters
    return functools.reduce(lambda owner, part: getattr(owner, part, None), api.split(".")[1:], tl) is not None


def _one_line(exc: BaseException) -> str:
    while exc.__cause__ is not None and type(exc).__name__ == "InterpreterError":  # it wraps the real one
        exc = exc.__cause__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:300]


def run_case(case: Case, device: str) -> dict:
    record = {"id": case.id, "kernel": case.kernel, "op": case.op, "dtype": case.dtype, "out_dtype": case.out_dtype,
              "tolerance_ulps": case.tolerance_ulps}
    missing = [api for api in case.needs if not _present(api)]
    if missing:
        return {**record, "status": "absent", "error": f"{', '.join(missing)} not in triton {triton.__version__}"}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            operands, out = _launch(case, device)
    except Exception as exc:  # a case that fails to compile or to run is a result too
        return {**record, "status": "error", "error": _one_line(exc)}
    lanes = list(case.rows) or [", ".join(lane) for lane in zip(*(_readable(x, case.dtype) for x in operands))]
    record.update(status="ok", lanes=lanes, bits=_hex(out), values=_readable(out, case.out_dtype))
    if case.reference:
        exact = getattr(torch, case.reference)(operands[0].cpu().double())
        record["reference"] = _hex(exact.to(getattr(torch, case.out_dtype)))
    return record


def run(device: str, out: Path, only: list[str]) -> int:
    metadata = _import_triton(device)
    cases = [case for case in all_cases() if not only or any(fnmatch.fnmatch(case.id, glob) for glob in only)]
    start, records = time.perf_counter(), []
    for number, case in enumerate(cases, 1):
        records.append(run_case(case, device))
        if records[-1]["status"] != "ok":
            print(f"[{number}/{len(cases)}] {case.id}: {records[-1]['status']}: {records[-1]['error']}")
    metadata.update(seconds=round(time.perf_counter() - start, 1), cases=len(records))
    cases_text = ",\n".join(json.dumps(record) for record in records)  # one case a line: diffs stay readable
    out.write_text(f'{{"format": "{FORMAT}", "metadata": {json.dumps(metadata)},\n"cases": [\n{cases_text}\n]}}\n')
    counts = {status: sum(r["status"] == status for r in records) for status in ("ok", "error", "absent")}
    print(f"{len(records)} cases in {metadata['seconds']} s on {metadata['device']}: {counts} -> {out}")
    return 0


# ----- compare -----

class Verdict(enum.Enum):  # in order of severity: a case takes its worst lane's
    IDENTICAL = "bit-identical"
    NAN_PAYLOAD = "NaN payload differs"
    ROUNDING = "differs within rounding"
    VALUE = "differs in value"
    CLASS = "differs in value class"
    NOT_COMPARED = "not compared"


class Comparison(NamedTuple):
    verdict: Verdict
    differ: int  # lanes
    lanes: int
    example: str  # the worst lane: "input: interpreter vs GPU (note)"


class MalformedResult(Exception):
    pass


def _decode(hex_bits: str, dtype: str) -> list[int]:
    """The lanes' raw bit patterns, as unsigned ints."""
    return [int(v) for v in np.frombuffer(bytes.fromhex(hex_bits), dtype=f"<u{WIDTH[dtype] // 8}")]


def _value(raw: int, dtype: str) -> float | int:
    width = WIDTH[dtype]
    if dtype.startswith("int"):
        return raw - (raw >> (width - 1) << width)
    if dtype == "bfloat16":
        raw, width = raw << 16, 32
    return float(np.array([raw], dtype=f"<u{width // 8}").view(f"<f{width // 8}")[0])


def _float_class(raw: int, dtype: str) -> str:
    value, sign = _value(raw, dtype), "-" if raw >> (WIDTH[dtype] - 1) else "+"
    if value != value:
        return "NaN"
    if value in (INF, -INF) or value == 0.0:
        return sign + ("inf" if value else "0")
    return "subnormal" if abs(value) < LIMITS[dtype][2] else "normal"


def ulps(a: int, b: int, dtype: str) -> int:
    """Distance between two float bit patterns in units in the last place (-0.0 and +0.0 are 0 apart)."""
    sign = 1 << (WIDTH[dtype] - 1)
    ordered = [-(raw & (sign - 1)) if raw & sign else raw for raw in (a, b)]
    return abs(ordered[0] - ordered[1])


def classify_lane(a: int, b: int, dtype: str, tolerance_ulps: int) -> tuple[Verdict, str, int]:
    """One lane's verdict, a note ('12 ulp', 'NaN vs +inf') and its ulp distance (0 across classes)."""
    if a == b:
        return Verdict.IDENTICAL, "", 0
    if dtype.startswith("int"):
        va, vb = _value(a, dtype), _value(b, dtype)
        if dtype == "int8" or (va < 0) != (vb < 0):
            return Verdict.CLASS, "true vs false" if dtype == "int8" else "sign differs", 0
        return Verdict.VALUE, f"{vb - va:+d}", 0
    ca, cb = _float_class(a, dtype), _float_class(b, dtype)
    if ca == cb == "NaN":
        return Verdict.NAN_PAYLOAD, "NaN payloads", 0
    if ca != cb and not {ca, cb} <= {"subnormal", "normal"}:
        return Verdict.CLASS, f"{ca} vs {cb}", 0
    distance = ulps(a, b, dtype)
    return (Verdict.ROUNDING if distance <= tolerance_ulps else Verdict.VALUE), f"{distance} ulp", distance


def load_result(path: Path) -> dict:
    """A run's JSON (or gzipped JSON, ``.json.gz``), checked; MalformedResult saying what is wrong otherwise."""
    try:
        data = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    except (OSError, ValueError, EOFError) as exc:
        raise MalformedResult(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise MalformedResult(f"{path}: not an interpreter_diff result (its 'format' must be {FORMAT!r})")
    if not isinstance(data.get("metadata"), dict) or not isinstance(data.get("cases"), list):
        raise MalformedResult(f"{path}: needs a 'metadata' object and a 'cases' list")
    for index, case in enumerate(data["cases"]):
        where = f"{path}: cases[{index}]"
        if not isinstance(case, dict) or not {"id", "status", "dtype", "out_dtype"} <= set(case):
            raise MalformedResult(f"{where}: needs id, status, dtype and out_dtype")
        try:
            ok = case["status"] != "ok" or len(_decode(case["bits"], case["out_dtype"])) == len(case["lanes"])
        except (KeyError, TypeError, ValueError) as exc:  # no bits or lanes, an unknown dtype, bits not hex
            raise MalformedResult(f"{where} ({case['id']}): unreadable result ({type(exc).__name__}: {exc})") from None
        if not ok:
            raise MalformedResult(f"{where} ({case['id']}): its bits do not hold one {case['out_dtype']} per lane")
    return data


def compare_case(left: dict | None, right: dict | None) -> Comparison:
    """One case of the interpreter's run (left) against the GPU's (right), lane by lane."""
    if left is None or right is None:
        return Comparison(Verdict.NOT_COMPARED, 0, 0, f"only in the {'GPU' if left is None else 'interpreter'} run")
    if left["status"] != "ok" or right["status"] != "ok":
        sides = "; ".join(f"{side}: {case['status']}" + (f" ({case['error']})" if case["status"] != "ok" else "")
                          for side, case in (("interpreter", left), ("GPU", right)))
        return Comparison(Verdict.NOT_COMPARED, 0, 0, sides)
    if left["lanes"] != right["lanes"] or left["out_dtype"] != right["out_dtype"]:
        return Comparison(Verdict.NOT_COMPARED, 0, 0, "the runs had different inputs: another version of the suite?")
    dtype, tolerance = left["out_dtype"], int(left.get("tolerance_ulps", 1))
    lanes = list(zip(left["lanes"], _decode(left["bits"], dtype), _decode(right["bits"], dtype)))
    worst, differ, example = (Verdict.IDENTICAL, 0), 0, ""
    for lane, a, b in lanes:
        verdict, note, distance = classify_lane(a, b, dtype, tolerance)
        differ += verdict is not Verdict.IDENTICAL
        if (list(Verdict).index(verdict), distance) > (list(Verdict).index(worst[0]), worst[1]):
            worst = (verdict, distance)
            example = f"{lane}: {_text(_value(a, dtype), dtype)} vs {_text(_value(b, dtype), dtype)}"
            example += f" ({note})" if note else ""
    return Comparison(worst[0], differ, len(lanes), example)


def _row(case_id: str, dtype: str, found: Comparison) -> str:
    lanes = f"{found.differ} of {found.lanes}" if found.lanes else "-"
    return f"| {case_id} | {dtype} | {lanes} | {found.example.replace('|', '/')} | {found.verdict.value} |"


def compare(left_path: Path, right_path: Path, out: Path | None) -> int:
    try:
        left, right = load_result(left_path), load_result(right_path)
    except MalformedResult as exc:
        print(f"interpreter_diff compare: {exc}", file=sys.stderr)
        return 2
    by_id = [{case["id"]: case for case in data["cases"]} for data in (left, right)]
    rows, sweeps, counts = [], [], {verdict: 0 for verdict in Verdict}
    for case_id in list(by_id[0]) + [case_id for case_id in by_id[1] if case_id not in by_id[0]]:
        found = compare_case(by_id[0].get(case_id), by_id[1].get(case_id))
        counts[found.verdict] += 1
        rows.append(_row(case_id, (by_id[0].get(case_id) or by_id[1][case_id])["dtype"], found))
        exact = by_id[0].get(case_id, {}).get("reference")  # sweeps: each side against float64 torch
        sweeps += [_row(f"{case_id} ({side})", case["dtype"], compare_case(case, {**case, "bits": exact}))
                   for side, case in (("interpreter", by_id[0].get(case_id)), ("GPU", by_id[1].get(case_id)))
                   if exact and case and case["status"] == "ok"]
    summary = ", ".join(f"{n} {verdict.value}" for verdict, n in counts.items() if n)
    header = ["| case | dtype | lanes that differ | example (input: {} vs {}) | classification |",
              "|---|---|---|---|---|"]
    lines = [f"**{len(rows)} cases, interpreter vs GPU:** {summary}.", ""]
    lines += [f"- {side}: " + ", ".join(f"{key} {value}" for key, value in data["metadata"].items())
              for side, data in (("interpreter", left), ("GPU", right))]
    lines += ["", header[0].format("interpreter", "GPU"), header[1], *rows]
    if sweeps:
        lines += ["", "## exp, log, sqrt: each side against float64 torch, rounded to the dtype", "",
                  header[0].format("result", "exact"), header[1], *sweeps]
    text = "\n".join(lines) + "\n"
    if out is None:
        print(text, end="")
    else:
        out.write_text(text)
        print(lines[0])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="run every case on one device and write the results")
    run_parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    run_parser.add_argument("--out", type=Path, required=True)
    run_parser.add_argument("--only", action="append", default=[], metavar="GLOB",
                            help="run only the cases whose id matches (repeatable), e.g. 'reduce/max/*'")
    compare_parser = commands.add_parser("compare", help="the Markdown table of where two runs differ")
    compare_parser.add_argument("interpreter", type=Path, help="the run with --device cpu")
    compare_parser.add_argument("gpu", type=Path, help="the run with --device cuda")
    compare_parser.add_argument("--out", type=Path, default=None, help="the table's file (default: stdout)")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.device, args.out, args.only)
    return compare(args.interpreter, args.gpu, args.out)


if __name__ == "__main__":
    sys.exit(main())
