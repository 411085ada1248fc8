"""Bounded, compile-aware shrinking (fuzz.shrinking) and the parts that stop each other."""

from __future__ import annotations

import time

import doubles
import pytest
import torch
from hypothesis.database import InMemoryExampleDatabase
from run_stops import FixedStop

import fuzz
import fuzz.run
import lse_fuzz
from fuzz.grading.parts import PartSignal
from fuzz.layouts import Layout, LayoutKind
from fuzz.recipes import RowSpec
from fuzz.shrinking import ShrinkStore, launch_class
from fuzz.strategies import LseInput


@pytest.fixture
def run(tmp_path):
    def run(impl, **options):
        options.setdefault("reproducer_dir", tmp_path / "reproducers")
        options.setdefault("device", "cpu")
        return lse_fuzz.check(impl, **options)

    return run


def _example(rows: int, cols: int, dtype=torch.float32, layout: Layout = Layout()) -> LseInput:
    values = torch.zeros(rows, cols, dtype=dtype)
    return LseInput(x=layout.materialize(values), values=values, layout=layout, specs=(RowSpec("zeros", 0),))


@pytest.mark.parametrize(("a", "b"), [
    ((3, 100), (5, 120)),  # rows and N within one block and class: one binary for a whole-row kernel
    ((2, 3), (7, 3)),
])
def test_examples_of_one_launch_class(a, b):
    assert launch_class(_example(*a)) == launch_class(_example(*b))


@pytest.mark.parametrize(("a", "b"), [
    ((3, 100), (3, 200)),  # N's power of two: another BLOCK
    ((3, 16), (3, 15)),  # N divisible by 16 or not: Triton specializes on it
    ((1, 5), (2, 5)),  # M == 1 is a constant of its own
])
def test_examples_of_other_launch_classes(a, b):
    assert launch_class(_example(*a)) != launch_class(_example(*b))


def test_the_dtype_and_the_layout_are_part_of_the_class():
    plain = launch_class(_example(4, 5))
    assert launch_class(_example(4, 5, torch.float16)) != plain
    assert launch_class(_example(4, 5, layout=Layout(kind=LayoutKind.TRANSPOSED))) != plain
    assert launch_class(_example(4, 5, layout=Layout(kind=LayoutKind.OFFSET, offset=1))) != plain  # unaligned


def test_a_failure_is_shrunk_to_the_minimal_input_within_the_default_budget(run):
    result = run(doubles.off_by_max, seed=0)
    assert result.check is not None and result.counterexample.shape == (1, 1)
    assert not result.costs.shrink_stopped and result.costs.shrink_steps > 0
    assert not any("shrinking stopped" in note for note in result.notes)


def test_no_shrink_budget_reports_the_failure_as_found_and_says_so(run):
    found = run(doubles.first_entry_shift, seed=11, shrink_seconds=0)
    shrunk = run(doubles.first_entry_shift, seed=11)
    assert found.check == shrunk.check == "agreement"
    # Hypothesis runs the failing example again to confirm it: that run is never skipped for want of
    # time (it was, and every failure whose shrink ran out of time came out flaky).
    assert found.status is shrunk.status is lse_fuzz.Status.FAILED, found.summary()
    assert found.costs.shrink_stopped and found.costs.shrink_steps <= 2
    assert any("shrinking stopped after its budget of 0 s" in note for note in found.notes)
    assert found.counterexample.values.numel() > shrunk.counterexample.values.numel()


def test_a_slow_shrink_stops_near_its_budget(run):
    def slow_and_wrong(x):  # every call takes a while; wrong on inputs of 50 elements or more
        time.sleep(0.05)
        return doubles.lse_float64(x) + (1.0 if x.numel() >= 50 else 0.0)

    started = time.perf_counter()
    result = run(slow_and_wrong, seed=3, shrink_seconds=0.5, checks=["agreement"])
    assert result.check == "agreement" and result.costs.shrink_stopped
    assert result.status is lse_fuzz.Status.FAILED, result.summary()
    # One candidate may be under way when the budget runs out: at most a call past it.
    assert result.costs.shrink_seconds < 0.5 + 1.0 and time.perf_counter() - started < 10


def test_a_bad_shrink_budget_is_refused_naming_it(run):
    with pytest.raises(lse_fuzz.InvalidArgument, match=r"shrink_seconds=-1; expected a number of seconds >= 0"):
        run(doubles.off_by_max, shrink_seconds=-1)


def test_within_the_compiled_classes_first_then_anywhere_keeps_the_minimal_input(run, monkeypatch):
    monkeypatch.setitem(fuzz.run.PREFER_COMPILED, "cpu", True)
    restricted = run(doubles.first_entry_shift, seed=11)
    monkeypatch.setitem(fuzz.run.PREFER_COMPILED, "cpu", False)
    free = run(doubles.first_entry_shift, seed=11)
    # Phase 1 skipped candidates of launch classes the run had not met; phase 2 shrank on from its
    # best example, so the counterexample is as small as without the preference.
    assert restricted.costs.shrink_deferred > 0 and free.costs.shrink_deferred == 0
    assert restricted.check == free.check == "agreement"
    assert restricted.counterexample.values.numel() <= free.counterexample.values.numel()
    assert restricted.counterexample.dtype == torch.float32


def test_the_store_hands_phase_one_failures_to_phase_two_as_not_yet_shrunk():
    store = ShrinkStore()
    store.save(b"key", b"best")
    store.save(b"key.pareto", b"front")
    store.demote()
    assert list(store.fetch(b"key")) == [] and list(store.fetch(b"key.secondary")) == [b"best"]
    assert list(store.fetch(b"key.pareto")) == [b"front"]


def test_a_users_database_still_gets_the_failure(run):
    database = InMemoryExampleDatabase()
    run(doubles.off_by_max, seed=0, database=database)
    assert any(values for values in database.data.values())


def test_a_part_ends_at_its_next_example_once_another_part_failed(run):
    result = run(doubles.lse_float64, budget=50, stop=FixedStop(others_failed=True))
    assert result.passed and result.examples == 0
    assert "stopped: another part of the run failed first" in result.notes


def test_a_failing_part_says_so_once_and_shrinks_on(run):
    stop = FixedStop(others_failed=False)
    result = run(doubles.off_by_max, seed=0, stop=stop)
    assert result.check is not None and stop.marked == 1 and result.counterexample.shape == (1, 1)


def test_part_signals_see_each_other_not_themselves(tmp_path):
    mine, theirs = PartSignal(tmp_path), PartSignal(tmp_path)
    theirs.name = "failed-another-process"
    assert not mine.others_failed()
    mine.failed()
    assert not mine.others_failed() and theirs.others_failed()
    theirs.failed()
    assert mine.others_failed()
    assert not PartSignal(tmp_path / "gone").others_failed()
