"""fuzz.lse_input: a drawn input knows its shape, dtype and layout at once and builds its tensors on
first use, the same tensors an eagerly built one holds."""

from __future__ import annotations

import torch

import fuzz.lse_input
from fuzz.layouts import Layout, LayoutKind
from fuzz.lse_input import LseInput
from fuzz.recipes import RowSpec, row_values
from fuzz.shrinking import launch_class

SPECS = (RowSpec("small", 0), RowSpec("scaled", 2))


def _counting(monkeypatch) -> list:
    built = []
    monkeypatch.setattr(fuzz.lse_input, "row_values", lambda *args: built.append(args) or row_values(*args))
    return built


def test_a_drawn_input_builds_its_values_and_view_on_first_use(monkeypatch):
    built = _counting(monkeypatch)
    layout = Layout(LayoutKind.PADDED, pad=3)
    example = LseInput.drawn(SPECS, (4, 9), torch.float16, 7, layout, "cpu")
    assert example.shape == (4, 9) and example.dtype == torch.float16 and example.layout == layout
    assert launch_class(example) and "2 x small" in example.describe() and built == []
    example.build()
    assert len(built) == 1
    eager = LseInput(x=layout.materialize(row_values(SPECS, 4, 9, torch.float16, 7), "cpu"),
                     values=row_values(SPECS, 4, 9, torch.float16, 7), layout=layout, specs=SPECS, seed=7)
    assert torch.equal(example.values, eager.values) and example.x.stride() == eager.x.stride()
    assert torch.equal(example.x, eager.x) and launch_class(example) == launch_class(eager)
    example.build()
    assert len(built) == 1  # built once


def test_a_view_built_as_the_example_runs_stays_unbuilt_and_is_released(monkeypatch):
    built = _counting(monkeypatch)
    example = LseInput.drawn(SPECS, (2, 3), torch.float32, 1, Layout(), "cpu", view_on_use=True)
    example.build()
    assert len(built) == 1 and example._x is None
    first = example.x
    example.release()
    assert example._x is None and torch.equal(example.x, first) and len(built) == 1
