"""fuzz.interpreter.bounds: every access of an interpreted kernel checked before it happens.

Triton's interpreter loads and stores with raw addresses in the fuzzer's own process: a kernel
that reads past its row and discards the lanes, or stores past its output, returned the right
numbers (or corrupted the heap) and passed. Each test launches a kernel with one such bug and
checks the named failure, or a correct kernel of the same shape and checks that nothing is said.
"""

from __future__ import annotations

import pytest
import torch

from reference._device import ensure_interpreter, interpreting

ensure_interpreter()  # before anything imports triton: Triton's library is built for the mode

from fuzz.interpreter import bounds  # noqa: E402
from fuzz.interpreter.bounds import OutOfBounds, violation_in  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting(), reason="Triton's interpreter only (no GPU here)")
bounds.install()


@triton.jit
def _row_sum(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    if MASKED:
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N)  # no `other`: masked lanes are never read
    else:
        x = tl.where(cols < N, tl.load(x_ptr + row * stride + cols), 0.0)  # the read happens anyway
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@triton.jit
def _store_rows(out_ptr, M, GUARD: tl.constexpr):
    row = tl.program_id(0)
    if GUARD:
        tl.store(out_ptr + row, 1.0, mask=row < M)
    else:
        tl.store(out_ptr + row, 1.0)


@triton.jit
def _load_at(x_ptr, out_ptr, OFFSET: tl.constexpr):
    tl.store(out_ptr, tl.load(x_ptr + OFFSET))


@triton.jit
def _atomic_at(out_ptr, OFFSET: tl.constexpr):
    tl.atomic_add(out_ptr + OFFSET, 1.0)


def _violation(launch) -> OutOfBounds:
    with pytest.raises(Exception) as raised:
        launch()
    violation = violation_in(raised.value)
    assert violation is not None, raised.value
    return violation


def test_an_unmasked_load_discarded_by_where_is_named_with_its_kernel_line_program_and_tensor():
    x, out = torch.randn(3, 5), torch.empty(3)
    violation = _violation(lambda: _row_sum[(3,)](x, out, 5, 5, BLOCK=8, MASKED=False))
    assert violation.access == "load" and violation.kernel == "_row_sum" and violation.program == (2, 0, 0)
    assert violation.where == "x_ptr[15]: 1 element past the end of a 15-element tensor"
    assert violation.lanes == 3
    assert violation.line.startswith("test_bounds.py:") and "tl.load(x_ptr + row * stride + cols)" in violation.line
    assert "program (2, 0, 0)" in str(violation)


def test_masked_off_lanes_are_never_judged():
    x, out = torch.randn(3, 5), torch.empty(3)
    _row_sum[(3,)](x, out, 5, 5, BLOCK=8, MASKED=True)
    torch.testing.assert_close(out, x.sum(1))


def test_a_read_past_a_view_into_its_storage_is_out_of_bounds():
    # The view ends where its rows end; what follows in the buffer is another tensor's (here, padding).
    buffer = torch.randn(3, 8)
    x, out = buffer[:, :5], torch.empty(3)
    _row_sum[(3,)](x, out, 5, 8, BLOCK=8, MASKED=True)  # the gaps of a strided view are read by no lane
    violation = _violation(lambda: _row_sum[(3,)](x, out, 5, 8, BLOCK=8, MASKED=False))
    assert violation.program == (2, 0, 0)
    assert violation.where == "x_ptr[21]: 1 element past the end of a 15-element tensor spanning 21 elements"


def test_a_grid_rounded_up_without_a_row_guard_stores_past_the_output():
    out = torch.zeros(3)
    _store_rows[(4,)](out, 3, GUARD=True)
    assert out.tolist() == [1.0, 1.0, 1.0]
    violation = _violation(lambda: _store_rows[(4,)](torch.zeros(3), 3, GUARD=False))
    assert violation.access == "store" and violation.program == (3, 0, 0)
    assert violation.where == "out_ptr[3]: 1 element past the end of a 3-element tensor"


def test_a_load_before_the_start_and_a_scalar_load():
    x, out = torch.arange(4.0), torch.empty(1)
    _load_at[(1,)](x, out, OFFSET=3)  # a pointer load of one scalar, in bounds
    assert out.item() == 3.0
    violation = _violation(lambda: _load_at[(1,)](x[1:], out, OFFSET=-2))
    assert violation.where == "x_ptr[-2]: 2 elements before the start of a 3-element tensor"


def test_atomics_are_checked_too():
    out = torch.zeros(2)
    _atomic_at[(1,)](out, OFFSET=1)
    assert out.tolist() == [0.0, 1.0]
    violation = _violation(lambda: _atomic_at[(1,)](torch.zeros(2), OFFSET=2))
    assert violation.access == "atomic" and violation.where.startswith("out_ptr[2]: 1 element past the end")


def test_judging_off_lets_the_access_happen_as_the_interpreter_does():
    buffer = torch.randn(3, 8)
    x, out = buffer[:, :5], torch.empty(3)
    with bounds.judging(False):
        _row_sum[(3,)](x, out, 5, 8, BLOCK=8, MASKED=False)  # reads the buffer's padding: no error
    torch.testing.assert_close(out, x.sum(1))


def test_a_violation_crosses_a_process_boundary_as_itself():
    violation = OutOfBounds("store", "_k", "k.py:3 `tl.store(out_ptr + row, v)`", (3, 0, 0),
                            "out_ptr[3]: 1 element past the end of a 3-element tensor", 1)
    assert OutOfBounds.from_dict(violation.to_dict()).to_dict() == violation.to_dict()
    assert OutOfBounds.from_dict({"access": "load"}) is None and OutOfBounds.from_dict("x") is None


def test_install_is_idempotent():
    assert bounds.install() and bounds.install() and bounds.installed()
