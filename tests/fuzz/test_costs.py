"""A run's costs (fuzz.costs): the time split, and budgets on the counters of fixed-seed runs.

The counters are deterministic for a seed on the CPU, so these budgets are regression guards that
time nothing: a change that draws far more launch classes, launches far more specializations (the
compiles of a GPU run) or takes far more shrink steps fails here. Each budget is about 1.5 x what
the run counted when it was set (the comment gives that count); raise one only with the reason.
"""

from __future__ import annotations

import doubles
import pytest
from doubles import two_pass

import lse_fuzz
import reference
from fuzz.costs import Costs
from fuzz.target import load_target
from pathlib import Path

WHOLE_ROW_BUG = Path(__file__).resolve().parents[1] / "docs" / "data" / "mylse.py"  # masked lanes load 0.0


@pytest.fixture
def run(tmp_path):
    def run(impl, **options):
        return lse_fuzz.check(impl, device="cpu", reproducer_dir=tmp_path, **options)

    return run


def test_costs_add_up_and_read_back():
    first = Costs(generation_seconds=1.0, call_seconds=2.0, examples=10, calls=30, specializations=4)
    second = Costs(generation_seconds=0.5, examples=5, calls=15, shrink_steps=7, shrink_stopped=True)
    total = first + second
    assert (total.examples, total.calls, total.shrink_steps, total.specializations) == (15, 45, 7, 4)
    assert total.generation_seconds == 1.5 and total.shrink_stopped
    assert Costs.from_dict(total.to_dict()) == total
    assert Costs.from_dict(None) == Costs()
    assert set(total.to_dict()["seconds"]) == {"generation", "calls", "compiling", "checks", "shrinking", "worker_start"}


def test_a_run_splits_its_time_and_counts_its_calls(run):
    result = run(two_pass.lse, budget=20, seed=0)
    costs = result.costs
    assert result.passed and costs.examples == 20 and costs.calls == 60  # three calls an example
    assert costs.call_seconds > 0 and costs.generation_seconds > 0 and costs.check_seconds > 0
    assert costs.call_seconds + costs.generation_seconds + costs.check_seconds <= result.seconds * 1.01
    assert costs.specializations > 0 and costs.launch_classes > 0 and costs.shrink_steps == 0
    assert result.to_dict()["costs"] == costs.to_dict()


@pytest.mark.parametrize(("name", "impl", "budget", "seed", "limits"), [
    # reference.lse, 60 examples: 26 specializations, 21 launch classes when set
    ("reference", reference.lse, 60, 0, {"specializations": 40, "launch_classes": 32}),
    # a two-pass Triton kernel: 24 specializations, 21 launch classes
    ("two_pass", two_pass.lse, 60, 0, {"specializations": 36, "launch_classes": 32}),
])
def test_a_passing_runs_counters_stay_within_budget(run, name, impl, budget, seed, limits):
    costs = run(impl, budget=budget, seed=seed).costs
    for counter, limit in limits.items():
        assert getattr(costs, counter) <= limit, f"{name}: {counter} = {getattr(costs, counter)} > {limit}"


@pytest.mark.parametrize(("name", "target", "seed", "limits"), [
    # a torch double whose failure shrinks a while: 72 shrink steps, 75 examples
    ("first_entry_shift", doubles.first_entry_shift, 11, {"shrink_steps": 110, "examples": 115}),
    # a whole-row Triton kernel that counts its masked lanes: 22 shrink steps, 9 specializations
    ("whole_row_bug", str(WHOLE_ROW_BUG) + ":lse", 0, {"shrink_steps": 35, "specializations": 14}),
])
def test_a_failing_runs_counters_stay_within_budget(run, name, target, seed, limits):
    impl = load_target(target) if isinstance(target, str) else target
    result = run(impl, budget=100, seed=seed)
    assert result.failure is not None and not result.costs.shrink_stopped
    for counter, limit in limits.items():
        value = getattr(result.costs, counter)
        assert value <= limit, f"{name}: {counter} = {value} > {limit}"
