"""Layouts rebuild the same values under every arrangement, poison what lies outside the view,
and round-trip through their dict form."""

from __future__ import annotations

import math
import resource

import pytest
import torch

from fuzz.layouts import HUGE_OFFSET, Layout, LayoutKind
from reference.errors import InvalidArgument

CASES = {
    "contiguous": (Layout(), (5, 1), 0),
    "padded": (Layout(LayoutKind.PADDED, pad=3), (8, 1), 0),
    "transposed": (Layout(LayoutKind.TRANSPOSED), (1, 4), 0),
    "transposed_padded": (Layout(LayoutKind.TRANSPOSED, pad=2), (1, 6), 0),
    "column_step": (Layout(LayoutKind.COLUMN_STEP, step=3), (15, 3), 0),
    "offset": (Layout(LayoutKind.OFFSET, offset=7), (5, 1), 7),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_materialize_holds_the_values_with_the_layouts_strides(name, dtype):
    layout, strides, offset = CASES[name]
    values = torch.arange(20, dtype=torch.float64).reshape(4, 5).to(dtype)
    x = layout.materialize(values)
    assert x.shape == (4, 5) and x.dtype == dtype
    assert x.stride() == strides and x.storage_offset() == offset
    assert torch.equal(x, values)


def test_storage_outside_the_view_is_poisoned_with_nan():
    x = Layout(LayoutKind.PADDED, pad=2).materialize(torch.zeros(3, 4))
    storage = torch.empty(0).set_(x.untyped_storage())
    assert torch.isnan(storage).sum() == 2 * 3  # two pad elements after each row
    assert not torch.isnan(x).any()


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
@pytest.mark.parametrize("kind", [k for k in LayoutKind if not Layout(k).is_huge])
def test_empty_shapes_materialize(kind, shape):
    x = Layout(kind, step=2 if kind is LayoutKind.COLUMN_STEP else 1).materialize(torch.zeros(shape))
    assert x.shape == shape


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("rows", [1, 2, 3])
def test_huge_offset_puts_an_element_past_2_31_without_touching_the_storage(rows):
    values = torch.randn(rows, 7)
    before = _max_rss_mib()
    x = Layout(LayoutKind.HUGE_OFFSET).materialize(values)
    last = x.storage_offset() + (rows - 1) * x.stride(0) + 6 * x.stride(1)
    assert last >= HUGE_OFFSET
    assert torch.equal(x, values)
    assert x.untyped_storage().nbytes() >= HUGE_OFFSET * 4
    assert _max_rss_mib() - before < 256, "the lazily allocated storage was written to"


@pytest.mark.parametrize("cols", [3, 4, 64])
def test_a_huge_column_stride_puts_the_last_column_past_2_31_with_a_stride_that_fits_an_int32(cols):
    values = torch.randn(5, cols)
    before = _max_rss_mib()
    x = Layout(LayoutKind.HUGE_COLUMN_STRIDE, pad=2).materialize(values)
    assert x.stride(0) == 1 and 5 + 2 <= x.stride(1) < 2**31
    assert (cols - 1) * x.stride(1) >= HUGE_OFFSET  # `col * stride_col` wraps in int32
    assert x.storage_offset() >= HUGE_OFFSET  # and a wrapped offset still lands in the storage
    assert torch.equal(x, values)
    assert _max_rss_mib() - before < 256, "the lazily allocated storage was written to"
    assert Layout(LayoutKind.HUGE_COLUMN_STRIDE).describe(5, 3) == \
        "huge_column_stride(strides=(1, 1073741824), storage_offset=2147483648)"


def test_huge_offset_rows_are_each_past_the_last():
    x = Layout(LayoutKind.HUGE_OFFSET, pad=1).materialize(torch.ones(3, 2))
    assert x.stride(0) >= math.ceil(HUGE_OFFSET / 2)


@pytest.mark.parametrize("layout", [Layout(), Layout(LayoutKind.COLUMN_STEP, step=2, pad=1),
                                    Layout(LayoutKind.HUGE_OFFSET, offset=3)])
def test_dict_round_trip(layout):
    assert Layout.from_dict(layout.to_dict()) == layout


def test_describe_names_kind_and_strides():
    assert Layout().describe(3, 4) == "contiguous"
    assert Layout(LayoutKind.PADDED, pad=2).describe() == "padded(pad=2)"
    assert Layout(LayoutKind.OFFSET, offset=5).describe(3, 4) == "offset(strides=(4, 1), storage_offset=5)"


BAD = {
    "unknown_kind": (lambda: Layout("diagonal"), "kind='diagonal' is not a layout; use one of: contiguous"),
    "negative_pad": (lambda: Layout(LayoutKind.PADDED, pad=-1), "pad=-1; expected an int >= 0"),
    "zero_step": (lambda: Layout(LayoutKind.COLUMN_STEP, step=0), "step=0; expected an int >= 1"),
    "float_offset": (lambda: Layout(LayoutKind.OFFSET, offset=1.5), "offset=1.5; expected an int >= 0"),
    "one_d_values": (lambda: Layout().materialize(torch.zeros(3)), "values.shape=(3,); expected a 2-D"),
    "dict_without_kind": (lambda: Layout.from_dict({"pad": 1}), "expected a dict with a 'kind' key"),
    "dict_extra_key": (lambda: Layout.from_dict({"kind": "padded", "gap": 1}), "unknown keys ['gap']"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_layouts_raise_invalid_argument_with_the_value(case):
    build, text = BAD[case]
    with pytest.raises(InvalidArgument) as info:
        build()
    assert text in str(info.value)


_WRAP_SCRIPT = """
import sys
sys.path.insert(0, {doubles!r})
import lse_fuzz
from doubles import int32_index
for function, huge in {runs!r}:
    result = lse_fuzz.check(getattr(int32_index, function), budget=120, seed=0, huge_offsets=huge,
                            checks=["agreement"], reproducer_dir={out!r})
    print("RESULT", function, huge, result.status.value, result.check,
          result.counterexample.layout.kind.value if result.counterexample else "-")
"""
WRAP_RUNS = [("lse", True), ("lse_int32_columns", True), ("lse_int32_columns", False)]


@pytest.fixture(scope="module")
def wrap_runs(tmp_path_factory) -> dict[tuple[str, bool], list[str]]:
    """The checks of int32-index kernels with and without huge offsets, in one process of their own
    (a huge view's storage is lazily allocated, out of the test process), as the tests below ask them:
    (function, huge) -> [status, check, the counterexample's layout kind]."""
    import subprocess
    import sys
    from pathlib import Path

    script = _WRAP_SCRIPT.format(doubles=str(Path(__file__).parents[1] / "implementations"),
                                 out=str(tmp_path_factory.mktemp("wrap")), runs=WRAP_RUNS)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    return {(function, huge == "True"): rest for function, huge, *rest in lines}


@pytest.mark.xdist_group("int32_wrap_runs")  # one worker, one process for both tests' checks
def test_huge_offsets_catch_32_bit_index_math_without_crashing(wrap_runs):
    """A wrapped 32-bit row offset lands inside the (lazily allocated) storage: a check fails."""
    status, check, kind = wrap_runs["lse", True]
    assert (status, check) == ("failed", "agreement") and kind.startswith("huge_")


@pytest.mark.xdist_group("int32_wrap_runs")
def test_only_a_huge_column_stride_catches_64_bit_rows_with_32_bit_columns(wrap_runs):
    """The half-fix passes a huge row stride; a wrapped column offset still lands in the storage."""
    assert wrap_runs["lse_int32_columns", True] == ["failed", "agreement", "huge_column_stride"]
    assert wrap_runs["lse_int32_columns", False] == ["passed", "None", "-"]