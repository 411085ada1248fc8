"""N-D layouts (fuzz.batching): the N-D input's rows are the example's rows, whatever the strides."""

from __future__ import annotations

import torch
from hypothesis import given, settings, strategies as st

from fuzz.batching import BatchLayout, batch_layouts
from fuzz.contract import Layouts


@st.composite
def _layouts(draw):
    ndim = draw(st.integers(1, 5))
    dim = draw(st.integers(0, ndim - 1))
    rows = 1 if ndim == 1 else draw(st.sampled_from([0, 1, 2, 6, 12, 7]))
    layout = draw(batch_layouts(rows, ndim, dim, draw(st.sampled_from(list(Layouts)))))
    return layout, draw(st.sampled_from([0, 1, 3, 5]))


@settings(max_examples=150, deadline=None)
@given(_layouts())
def test_rows_of_the_nd_view_are_the_values(drawn):
    layout, cols = drawn
    values = torch.arange(layout.rows * cols, dtype=torch.float32).reshape(layout.rows, cols)
    x = layout.materialize(values)
    assert tuple(x.shape) == layout.shape(cols)
    assert torch.equal(x.movedim(layout.dim, -1).reshape(layout.rows, cols), values)
    assert torch.equal(layout.as_rows(x), values)
    if values.numel():
        row, col = layout.rows - 1, cols - 1
        assert x[layout.index(row, col)] == values[row, col]
        # Distinct elements, distinct addresses: the poison around them is untouched.
        storage = torch.empty(0).set_(x.untyped_storage())
        assert int(torch.isnan(storage).logical_not().sum()) == values.numel()
    layout.write(x, values + 1)
    assert torch.equal(layout.as_rows(x), values + 1)
    assert BatchLayout.from_dict(layout.to_dict()) == layout


def test_contiguous_layouts_are_contiguous_and_rows_layouts_keep_the_dims_in_order():
    @settings(max_examples=40, deadline=None)
    @given(batch_layouts(6, 3, 1, Layouts.CONTIGUOUS), batch_layouts(6, 3, 1, Layouts.ROWS))
    def run(contiguous, rows):
        x = contiguous.materialize(torch.zeros(6, 4))
        assert x.is_contiguous()
        strides = rows.materialize(torch.zeros(6, 4)).stride()
        assert list(strides) == sorted(strides, reverse=True) and strides[-1] == 1

    run()


def test_a_batch_of_size_0_holds_no_rows():
    layout = BatchLayout((2, 0), 1, (0, 1, 2))
    x = layout.materialize(torch.zeros(0, 5))
    assert tuple(x.shape) == (2, 5, 0) and layout.rows == 0
