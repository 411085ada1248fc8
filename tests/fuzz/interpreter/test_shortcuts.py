"""The interpreter's shortcuts through Triton's language layer (fuzz.interpreter.shortcuts) compute
what Triton's own code computes, raise what it raises, and are installed only where Triton is laid
out as they expect."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from fuzz.interpreter import repairs, shortcuts
from reference._device import interpreting

import triton  # noqa: E402  (after fuzz: the interpreter is on where no GPU is)
import triton.language as tl  # noqa: E402
from triton.language import core  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting() or not hasattr(interpreter, "interpreter_semantic"),
                                reason="kernels run in Triton's interpreter only where no GPU is")


@pytest.fixture(autouse=True)
def _repaired():
    """The interpreter as the fuzzer runs it: every repair (bfloat16 among them), the shortcuts too."""
    repairs.install()


@pytest.fixture
def without_shortcuts(monkeypatch, _repaired):
    """Triton's own code back in place of the shortcuts for the test (restored after it)."""
    assert shortcuts.install()
    for owner, name, original in shortcuts._REPLACED:
        monkeypatch.setattr(owner, name, original)


@triton.jit
def _clamped(x, low):
    return tl.maximum(x, low)


@triton.jit
def _tile_kernel(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    # Blocks of one shape, [BM, 1] with [1, BN], scalars with blocks, int32 index math, a helper.
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    x = tl.load(x_ptr + rows * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=1)
    e = tl.where(mask, tl.exp(x - m[:, None]), 0.0)
    pairs = tl.sum(tl.reshape(e, (BM, BN // 2, 2)), axis=2)
    total = tl.sum(pairs, axis=1) + tl.zeros((BM,), dtype=tl.float32)
    lse = _clamped(m + tl.log(total), -1e30)
    parity = (tl.arange(0, BM) * 3 + 1) % 2
    out = tl.where(parity == 0, lse, lse.to(tl.float64).to(tl.float32))
    tl.store(out_ptr + tl.program_id(0) * BM + tl.arange(0, BM), out, mask=tl.program_id(0) * BM + tl.arange(0, BM) < M)


@triton.jit
def _half_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    # Arithmetic in the input's own half-precision type and a cumulative sum (no Python scalar:
    # Triton 3.6's interpreter cannot make a bfloat16 constant).
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * N + cols, mask=cols < N, other=0.0)
    y = x * x - x
    tl.store(out_ptr + tl.program_id(0) * N + cols, tl.cumsum(y, axis=0), mask=cols < N)


def _run_all() -> list[torch.Tensor]:
    torch.manual_seed(3)
    outs = []
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = (torch.randn(7, 45) * 20).to(dtype)
        x[2, 5] = float("inf")
        x[4] = float("-inf")
        out = torch.empty(7, dtype=torch.float32)
        _tile_kernel[(2,)](x, out, 7, 45, x.stride(0), BM=4, BN=64)
        outs.append(out)
        half = torch.empty_like(x)
        _half_kernel[(7,)](x, half, 45, BLOCK=64)
        outs.append(half)
    return outs


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({4: torch.int32, 2: torch.int16}[t.element_size()])


_NAN_FROM_INF = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf, as meant


@_NAN_FROM_INF
def test_kernels_compute_the_same_bits_with_and_without_the_shortcuts(without_shortcuts, monkeypatch):
    before = _run_all()
    monkeypatch.undo()  # the shortcuts back
    assert shortcuts.installed()
    after = _run_all()
    assert [torch.equal(_bits(a), _bits(b)) for a, b in zip(before, after)] == [True] * len(before)


@_NAN_FROM_INF
def test_the_comparison_sees_a_wrong_broadcast(monkeypatch):
    """The test above can fail: a same-shape shortcut that swaps its operands (x * x - x) is seen."""
    assert shortcuts.install()
    before = _run_all()
    semantic = interpreter.interpreter_semantic
    honest = semantic.broadcast_impl_value

    def wrong(lhs, rhs):
        floats = lhs.type.scalar.is_floating() and rhs.type.scalar.is_floating()
        return (rhs, lhs) if floats and lhs.type == rhs.type else honest(lhs, rhs)

    monkeypatch.setattr(semantic, "broadcast_impl_value", wrong)
    after = _run_all()
    assert not all(torch.equal(_bits(a), _bits(b)) for a, b in zip(before, after))


@triton.jit
def _bad_arange_kernel(out_ptr):
    tl.store(out_ptr + tl.arange(0, 3), 1.0)


@triton.jit
def _bad_reshape_kernel(out_ptr):
    tl.store(out_ptr + tl.reshape(tl.arange(0, 16), (3, 5)), 1.0)


def _errors() -> list[str]:
    said = []
    for kernel in (_bad_arange_kernel, _bad_reshape_kernel):
        try:
            kernel[(1,)](torch.zeros(16))
            said.append("no error")
        except Exception as exc:  # noqa: BLE001 (compared as Triton said it)
            said.append(f"{type(exc).__name__}: {exc}")
    return said


def test_invalid_shapes_are_refused_as_triton_refuses_them(without_shortcuts, monkeypatch):
    expected = _errors()
    monkeypatch.undo()
    assert _errors() == expected == [e for e in expected if e != "no error"]


@pytest.mark.parametrize("shape", [[4, 8], [core.constexpr(4)], core.tuple([2, 2]), [3], [2.0], (4,), [0], []],
                         ids=["ints", "constexpr", "triton_tuple", "not_a_power_of_two", "float", "python_tuple",
                              "zero", "empty"])  # named: some Triton tuples answer getattr with a ValueError
def test_a_block_type_is_what_tritons_own_code_builds_or_refuses(shape):
    assert shortcuts.install()
    own = core.block_type.__init__.__wrapped__

    def built(init):
        block = core.block_type.__new__(core.block_type)
        try:
            init(block, tl.float16, shape)
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__, str(exc)
        return block.name, block.numel, list(block.shape), block.element_ty

    # Twice: the second may come from the memo.
    assert built(core.block_type.__init__) == built(own) == built(core.block_type.__init__)


def test_a_value_shares_its_shape_with_others_of_its_shape_and_has_its_own_type():
    assert shortcuts.install()
    a = core.tensor(None, core.block_type(tl.float32, [2, 4]))
    b = core.tensor(None, core.block_type(tl.int1, [2, 4]))
    assert a.shape is b.shape and [s.value for s in a.shape] == [2, 4] and a.numel.value == 8
    assert (a.dtype, b.dtype) == (tl.float32, tl.int1) and b.type.element_ty == tl.int1


def test_unwrap_answers_as_tritons_own():
    assert shortcuts.install()
    own = core._unwrap_if_constexpr.__wrapped__
    values = [3, 2.5, True, None, "s", tl.float32, core.constexpr(7), [core.constexpr(1), 2],
              (core.constexpr(1), 2), core.tuple([core.constexpr(5)])]
    for value in values:
        fast, slow = core._unwrap_if_constexpr(value), own(value)
        assert type(fast) is type(slow) and str(fast) == str(slow), value
    holding = [name for name, module in sys.modules.items()
               if name.startswith("triton.language") and getattr(module, "_unwrap_if_constexpr", None) is own]
    assert holding == [] and core._unwrap_if_constexpr is not own  # the language's modules call the shortcut


def test_install_is_idempotent():
    assert shortcuts.install()
    count = len(shortcuts._REPLACED)
    first = core.tensor.__init__
    assert shortcuts.install() and shortcuts.installed()
    assert core.tensor.__init__ is first and len(shortcuts._REPLACED) == count


def test_a_triton_laid_out_otherwise_is_left_as_it_is():
    class OtherBlock:  # a block type that keeps other fields
        def __init__(self, element_ty, shape):
            self.element_ty, self.dims = element_ty, list(shape)

    class OtherTensor:
        def __init__(self, handle, type):
            self.handle, self.type = handle, type

    fake = types.SimpleNamespace(block_type=OtherBlock, tensor=OtherTensor, float32="fp32")
    assert not shortcuts._block_shapes(fake) and not shortcuts._tensor_shapes(fake)
    assert OtherBlock.__init__.__name__ == "__init__" and not hasattr(OtherBlock.__init__, "__wrapped__")

    def _patch_attr(obj, name, member, scope):  # one parameter fewer
        pass

    fake_interpreter = types.SimpleNamespace(_patch_attr=_patch_attr, interpreter_semantic=None)
    assert not shortcuts._builtin_calls(fake_interpreter, core) and fake_interpreter._patch_attr is _patch_attr
    assert not shortcuts._same_shape_broadcast(fake_interpreter)


def test_a_builtins_wrapper_reads_as_tritons_own_and_skips_only_the_check():
    from fuzz.interpreter import frontend

    assert shortcuts.install()
    holder = types.SimpleNamespace()
    interpreter._patch_attr(holder, "cast", tl.cast, None, interpreter._LangPatchScope())
    triton_s = types.SimpleNamespace()
    interpreter._patch_attr.__wrapped__(triton_s, "cast", tl.cast, None, interpreter._LangPatchScope())
    assert holder.cast.__qualname__ == triton_s.cast.__qualname__
    assert frontend._builtin_of(holder.cast) is tl.cast  # the builtin it stands for, as the front end reads it
    with pytest.raises(ValueError, match="Did you forget"):
        tl.cast(1, tl.float32)  # Triton's own check still stands outside a kernel


def test_the_computation_type_of_every_pair_is_tritons_and_a_refusal_raises_each_time():
    assert shortcuts.install()
    semantic = interpreter.interpreter_semantic
    own = semantic.computation_type_impl.__wrapped__
    kinds = [tl.int1, tl.int8, tl.uint8, tl.int16, tl.uint32, tl.int32, tl.int64, tl.uint64, tl.float16,
             tl.bfloat16, tl.float32, tl.float64, tl.float8e5, tl.float8e4nv]

    def answer(compute, *args):
        try:
            return str(compute(*args))
        except TypeError as exc:
            return f"TypeError: {exc}"

    cases = [(a, sa, b, sb, dm) for a in kinds for b in kinds for sa in (False, True) for sb in (False, True)
             for dm in (False, True)]
    for _ in range(2):  # the second round from the memo
        assert [answer(semantic.computation_type_impl, *case) for case in cases] == [answer(own, *case) for case in cases]
    assert any(answer(own, *case).startswith("TypeError") for case in cases)  # refusals are among them
