"""fuzz.interpreter.initialized: reads of memory the call allocated with torch.empty and nothing wrote.

A kernel that reads a scratch buffer before any program stored to it gets what the allocator left
there: zeros on a fresh page, and often the right answer. Each test runs a call under tracking with
one such read (or a result never written) and checks the named failure, or the same call with the
write in place (by a kernel, by a PyTorch op, through NumPy) and checks that nothing is said.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference._device import ensure_interpreter, interpreting

ensure_interpreter()  # before anything imports triton: Triton's library is built for the mode

from fuzz.interpreter import bounds  # noqa: E402
from fuzz.interpreter.bounds import OutOfBounds, UninitializedRead, violation_in  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting(), reason="Triton's interpreter only (no GPU here)")
bounds.install()


@triton.jit
def _through_scratch(x_ptr, scratch_ptr, out_ptr, N, BLOCK: tl.constexpr, STORE: tl.constexpr):
    """out[row] = the row's max, passed through scratch[row] (stored there first unless STORE is off)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    if STORE:
        tl.store(scratch_ptr + row, tl.max(x, axis=0))
    tl.store(out_ptr + row, tl.load(scratch_ptr + row))


@triton.jit
def _copy_masked(src_ptr, out_ptr, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + cols, tl.load(src_ptr + cols, mask=cols < N, other=0.0), mask=cols < BLOCK)


@triton.jit
def _accumulate(acc_ptr, XCHG: tl.constexpr):
    if XCHG:
        tl.atomic_xchg(acc_ptr + tl.program_id(0), 1.0)
    else:
        tl.atomic_add(acc_ptr + tl.program_id(0), 1.0)


def _tracked(call):
    """``call()`` under tracking, its result judged as a call's is; the violation, or None."""
    try:
        with bounds.judging(True, initialized=True):
            bounds.judge_result(call())
    except Exception as exc:  # noqa: BLE001 (the interpreter wraps what the builder raised)
        return violation_in(exc)
    return None


def _through(x: torch.Tensor, *, store: bool, prepare=lambda scratch: None):
    def call():
        scratch, out = torch.empty(x.shape[0]), torch.empty(x.shape[0])
        prepare(scratch)
        _through_scratch[(x.shape[0],)](x, scratch, out, x.shape[1], BLOCK=8, STORE=store)
        return out
    return call


def test_a_kernel_reading_scratch_it_never_wrote_is_named_with_the_allocation_site():
    violation = _tracked(_through(torch.randn(3, 5), store=False))
    assert isinstance(violation, UninitializedRead) and violation.check == "uninitialized_read"
    assert violation.access == "load" and violation.kernel == "_through_scratch" and violation.program == (0, 0, 0)
    assert violation.where.startswith("scratch_ptr[0]: never written since torch.empty at test_initialized.py:")
    assert "tl.load(scratch_ptr + row)" in violation.line


def test_a_kernel_that_writes_before_it_reads_passes():
    x = torch.randn(3, 5)
    assert _tracked(_through(x, store=True)) is None


@pytest.mark.parametrize("write", [
    lambda s: s.fill_(0.0),
    lambda s: s.copy_(torch.ones(3)),
    lambda s: torch.zeros(3, out=s),
    lambda s: s.__setitem__(slice(None), 2.0),
    lambda s: s.numpy().__setitem__(slice(None), 3.0),  # written where PyTorch cannot see: counted as written
], ids=["fill_", "copy_", "out=", "setitem", "numpy"])
def test_a_write_by_pytorch_or_through_numpy_counts(write):
    assert _tracked(_through(torch.randn(3, 5), store=False, prepare=write)) is None


def test_a_partial_write_leaves_the_rest_unwritten():
    violation = _tracked(_through(torch.randn(3, 5), store=False, prepare=lambda s: s[:2].fill_(0.0)))
    assert violation is not None and violation.program == (2, 0, 0)
    assert violation.where.startswith("scratch_ptr[2]: never written")


def test_masked_off_lanes_are_never_judged_and_untracked_memory_never_is():
    def call():
        src, out = torch.empty(8), torch.zeros(8)
        src[:3] = 1.0
        _copy_masked[(1,)](src, out, 3, BLOCK=8)  # lanes 3.. of src are unwritten, and masked off
        return out
    assert _tracked(call) is None

    def from_zeros():  # torch.zeros, the input, memory from before the call: not tracked
        out = torch.zeros(4)
        _through_scratch[(4,)](torch.randn(4, 2), out, out, 2, BLOCK=2, STORE=False)
        return out
    assert _tracked(from_zeros) is None


def test_an_atomic_add_into_torch_empty_reads_it_an_exchange_does_not():
    def accumulate(xchg: bool):
        def call():
            acc = torch.empty(2)
            _accumulate[(2,)](acc, XCHG=xchg)
            return acc
        return call
    violation = _tracked(accumulate(False))
    assert violation is not None and violation.access == "atomic" and violation.where.startswith("acc_ptr[0]")
    assert _tracked(accumulate(True)) is None


def test_a_result_with_elements_nothing_wrote_is_named():
    def call():
        out = torch.empty(4)
        out[:3] = 1.0
        return out
    violation = _tracked(call)
    assert isinstance(violation, UninitializedRead) and violation.access == "return"
    assert violation.where.startswith("the result[3] was never written since torch.empty at test_initialized.py:")


def test_without_tracking_nothing_is_judged():
    scratch, out = torch.empty(3), torch.empty(3)
    with bounds.judging(True, initialized=False):
        _through_scratch[(3,)](torch.randn(3, 5), scratch, out, 5, BLOCK=8, STORE=False)
        bounds.judge_result(torch.empty(3))


def test_nothing_outlives_the_call():
    scratch = []

    def call():
        scratch.append(torch.empty(3))
        return torch.ones(3)
    assert _tracked(call) is None
    out = torch.empty(3)
    with bounds.judging(True, initialized=True):  # an allocation from an earlier call is not tracked
        _through_scratch[(3,)](torch.randn(3, 5), scratch[0], out, 5, BLOCK=8, STORE=False)
    assert np.isfinite(out.numpy()).shape == (3,)


def test_a_violation_crosses_a_process_boundary_as_itself():
    violation = UninitializedRead("load", "_k", "k.py:3 `tl.load(s_ptr + row)`", (1, 0, 0),
                                  "s_ptr[1]: never written since torch.empty at k.py:9 allocated it", 2)
    back = OutOfBounds.from_dict(violation.to_dict())
    assert isinstance(back, UninitializedRead) and back.to_dict() == violation.to_dict()
