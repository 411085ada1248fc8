"""The interpreter patches the language once per launch (fuzz.interpreter.pace), and computes the same."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
import torch

from fuzz.interpreter import pace
from reference._device import interpreting

import triton  # noqa: E402  (after fuzz: the interpreter is on where no GPU is)
import triton.language as tl  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting() or not hasattr(interpreter, "GridExecutor"),
                                reason="kernels run in Triton's interpreter only where no GPU is")


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def _row_sum(x):
    return tl.sum(x, axis=0)


@triton.jit
def _helpers_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    # Seven calls of @triton.jit functions a program (tl.max and tl.sum are such functions too).
    m = tl.maximum(_row_max(x), _row_max(x))
    total = _row_sum(tl.exp(x - m))
    tl.store(out_ptr + row, m + tl.log(total))


def _lse(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0], dtype=torch.float32)
    _helpers_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


def _count_patches(monkeypatch) -> list[int]:
    """One entry per language module Triton's _patch_lang patches (it calls _patch_lang_core for each)."""
    calls: list[int] = []
    original = interpreter._patch_lang_core

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(interpreter, "_patch_lang_core", counted)
    return calls


def test_a_launch_patches_each_language_once_not_once_per_helper_call(monkeypatch):
    assert pace.install() and pace.installed()
    calls = _count_patches(monkeypatch)
    x = torch.randn(5, 37)
    _lse(x)
    # Once for each set of language modules the launch's functions see (the kernel's module,
    # triton.language.standard's, a repair's), not again for every helper call of each of the 5
    # programs (35 more times).
    assert 1 <= len(calls) <= 3, len(calls)


def test_without_it_each_helper_call_patches_again(monkeypatch):
    """What the module repairs (Triton 3.9's interpreter), shown with the wrapper bypassed."""
    pace.install()
    calls = _count_patches(monkeypatch)
    # Every wrapper bypassed, down to Triton's own (fuzz.interpreter.kernel_globals may wrap this one).
    monkeypatch.setattr(interpreter.GridExecutor, "__call__", inspect.unwrap(interpreter.GridExecutor.__call__))
    _lse(torch.randn(5, 37))
    assert len(calls) > 10, len(calls)


def test_the_kernel_computes_what_it_computed_before():
    x = torch.randn(6, 100) * 10
    pace.install()
    torch.testing.assert_close(_lse(x), torch.logsumexp(x, dim=1), rtol=1e-5, atol=1e-5)


def test_install_is_idempotent():
    assert pace.install()
    first = interpreter._patch_lang
    assert pace.install()
    assert interpreter._patch_lang is first


def test_the_numpy_dtype_lookup_is_remembered_and_answers_as_before():
    lookup = pace._remembered(lambda dtype: (dtype, object()))
    assert lookup(tl.float32) is lookup(tl.float32)
    assert lookup(tl.float16) != lookup(tl.float32)


def test_a_block_types_numpy_dtype_is_its_elements_and_what_triton_answers():
    pace.install()
    lookup = interpreter._get_np_dtype
    own = lookup.__wrapped__
    types = [tl.float32, tl.bfloat16, tl.int1, tl.uint64, tl.pointer_type(tl.float16),
             tl.block_type(tl.float16, [4]), tl.block_type(tl.bfloat16, [2, 8]), tl.block_type(tl.int1, [16]),
             tl.block_type(tl.pointer_type(tl.float32), [8])]
    assert [lookup(t) for t in types] == [own(t) for t in types]
    assert [lookup(t) for t in types] == [lookup(t) for t in types]  # asked again: remembered, the same


@triton.jit
def _flags_kernel(x_ptr, or_ptr, xor_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    bits = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0)
    tl.store(or_ptr + row, tl.reduce_or(bits, axis=0))
    tl.store(xor_ptr + row, tl.xor_sum(bits, axis=0))


def test_bitwise_reductions_give_the_per_element_answers_at_once(monkeypatch):
    pace.install()
    x = torch.randint(0, 2**20, (4, 37), dtype=torch.int32)
    ors, xors = torch.empty(4, dtype=torch.int32), torch.empty(4, dtype=torch.int32)

    def per_element(self, input):  # Triton's fallback: the combine function once per element
        raise AssertionError("reduced element by element")

    monkeypatch.setattr(interpreter.ReduceOps, "generic_reduce", per_element)
    _flags_kernel[(4,)](x, ors, xors, 37, BLOCK=64)
    rows = x.numpy()
    assert ors.tolist() == [int(np.bitwise_or.reduce(r)) for r in rows]
    assert xors.tolist() == [int(np.bitwise_xor.reduce(r)) for r in rows]


def test_a_kernels_own_combine_function_is_still_called_per_element(monkeypatch):
    pace.install()
    calls = []
    original = interpreter.ReduceOps.generic_reduce

    def per_element(self, input):
        calls.append(1)
        return original(self, input)

    monkeypatch.setattr(interpreter.ReduceOps, "generic_reduce", per_element)
    x = torch.randn(3, 20)
    torch.testing.assert_close(_own_combine_max(x), x.max(dim=1).values)
    assert calls


@triton.jit
def _larger(a, b):
    return tl.where(a > b, a, b)


@triton.jit
def _own_max_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    tl.store(out_ptr + row, tl.reduce(x, 0, _larger))


def _own_combine_max(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0])
    _own_max_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=32)
    return out


@triton.jit
def _index_math_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    # int32 arithmetic only (no comparison of the kernel's own): what overflows wraps, on a GPU too.
    tl.store(out_ptr + row * BLOCK + cols, tl.load(x_ptr + row * N + cols) * 65536 + 7)


def _index_math(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _index_math_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=x.shape[1])
    return out


def _count_comparisons(monkeypatch) -> list[int]:
    """One entry per ``<=`` the language's semantics builds (the overflow check builds two per operation)."""
    calls: list[int] = []
    original = interpreter.interpreter_semantic.less_equal

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(interpreter.interpreter_semantic, "less_equal", counted)
    return calls


def test_the_integer_overflow_check_that_cannot_fire_is_not_computed_and_the_values_are_the_same(monkeypatch):
    x = torch.tensor([[1, 40000, -40000, 2**31 - 1]], dtype=torch.int32)
    wrapped = ((x.to(torch.int64) * 65536 + 7 + 2**31) % 2**32 - 2**31).to(torch.int32)
    pace.install()
    builder = interpreter.interpreter_builder
    assert builder.options.sanitize_overflow is False and builder.options.debug is False
    comparisons = _count_comparisons(monkeypatch)
    assert torch.equal(_index_math(x), wrapped) and comparisons == []
    # As Triton has it: each int32 operation is checked again in int64, the same values come out.
    monkeypatch.setattr(builder, "options", dataclasses.replace(builder.options, sanitize_overflow=True))
    assert torch.equal(_index_math(x), wrapped) and len(comparisons) > 0


def test_with_the_interpreters_asserts_on_the_overflow_check_stays(monkeypatch):
    builder = type("Builder", (), {})()
    builder.options = dataclasses.replace(interpreter.interpreter_builder.options, sanitize_overflow=True, debug=True)
    pace._no_overflow_checks_without_asserts(builder)
    assert builder.options.sanitize_overflow is True
    builder.options = dataclasses.replace(builder.options, debug=False)
    pace._no_overflow_checks_without_asserts(builder)
    assert builder.options.sanitize_overflow is False
