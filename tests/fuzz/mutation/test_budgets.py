"""The budgets of the mutation engine: one default for both presets, the survivors' re-run sized to the
device (the CPU's interpreter gets fewer examples than a GPU), the command line and the runner agree
on the numbers, and every report says which budgets a verdict rests on and where the device scaled them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fuzz import defaults, option_table
from fuzz.cli import main
from fuzz.grading.parts import part_count
from fuzz.mutation import MutationReport, discover
from fuzz.mutation import runner
from fuzz.mutation.report import budgets, markdown_report
from fuzz.mutation.runner import CPU_THOROUGH_BUDGET, GPU_THOROUGH_BUDGET, default_thorough_budget, mutation_options
from fuzz.profiles import PROFILES

TINY_DIR = Path(__file__).parents[2] / "implementations" / "mutate"


@pytest.mark.parametrize("device, expected", [
    ("cpu", CPU_THOROUGH_BUDGET),
    ("cuda", GPU_THOROUGH_BUDGET),
    ("cuda:1", GPU_THOROUGH_BUDGET),
], ids=["cpu", "cuda", "cuda-index"])
def test_the_survivors_rerun_is_sized_to_the_device(device, expected):
    assert default_thorough_budget(device) == expected


def test_the_gpu_rerun_is_the_thorough_profile_and_the_cpu_one_is_smaller():
    assert GPU_THOROUGH_BUDGET == PROFILES["lse-thorough"]
    assert 0 < CPU_THOROUGH_BUDGET < GPU_THOROUGH_BUDGET


def test_the_command_line_repeats_the_runners_defaults():
    """--help imports nothing heavy, so the numbers are written twice: here they are kept in step."""
    assert (f"{GPU_THOROUGH_BUDGET} on a GPU, {CPU_THOROUGH_BUDGET} on the CPU"
            in option_table.option("thorough_budget").help_for("mutate"))
    assert runner.DEFAULT_BUDGET == defaults.MUTANT_BUDGET == 250  # both presets, every device
    assert runner.GATE_TIMEOUT == defaults.GRADE_TIMEOUT == 900.0


class _Stop(BaseException):
    """Ends the command where the test has what it needs (not an Exception: the command would
    report that as its own internal error)."""


@pytest.mark.parametrize("command_line, thorough", [
    (["mutate", str(TINY_DIR / "tiny_lse.py")], None),  # the runner picks the device's default
    (["mutate", str(TINY_DIR / "tiny_lse.py"), "--thorough-budget", "2000"], 2000),  # the GPU-sized re-run, anywhere
    (["mutate", str(TINY_DIR / "tiny_lse.py"), "--thorough-budget", "0"], 0),
    (["mutants"], None),  # the bundled catalog: the same defaults
], ids=["default", "gpu-sized", "none", "mutants"])
def test_the_command_line_leaves_the_default_to_the_runner(command_line, thorough, monkeypatch, tmp_path):
    seen = {}

    def fake_run_mutation(target, **arguments):
        seen.update(arguments, target=target)
        raise _Stop

    monkeypatch.setattr("fuzz.mutation.runner.run_mutation", fake_run_mutation)
    with pytest.raises(_Stop):
        main([*command_line, "-q", "--out-dir", str(tmp_path)])
    options = seen["options"]
    assert seen["thorough_budget"] == thorough and options.budget == runner.DEFAULT_BUDGET
    assert options.parts is None and seen["timeout_factor"] == defaults.MUTANT_TIMEOUT_FACTOR
    assert options.shrink_seconds == defaults.MUTANT_SHRINK_SECONDS
    bundled = command_line[0] == "mutants"
    assert (seen["source"], seen["exit_rule"].value, seen["target"]) == \
        (("catalog", "all-killed", None) if bundled else ("operators", "fail-under", command_line[1]))


def test_a_negative_thorough_budget_is_refused(capsys):
    assert main(["mutate", str(TINY_DIR / "tiny_lse.py"), "--thorough-budget", "-1"]) == 2
    assert "--thorough-budget=-1" in capsys.readouterr().err


def _report(**config) -> MutationReport:
    base = {"target": "k.py:lse", "budget": 100, "seed": 0, "device": "cpu", "declared_contract": "strict",
            "max_elements": None, "max_elements_drawn": 65536, "kernels": [], "launcher": [],
            "thorough_budget": CPU_THOROUGH_BUDGET,
            "thorough_budget_source": runner.thorough_source(True, "cpu")}
    return MutationReport(results=[], gate=[], config={**base, **config}, baseline_seconds=0.0, timeout_seconds=0.0,
                          gate_seconds=0.0, mutation_seconds=0.0, kernel=discover(str(TINY_DIR / "tiny_lse.py")),
                          command="k.py:lse")


@pytest.mark.parametrize("config, says, never", [
    ({}, [f"survivors again with `lse-thorough`, {CPU_THOROUGH_BUDGET} examples (the CPU default",
          f"--thorough-budget {GPU_THOROUGH_BUDGET} asks for that here", "budget 100 examples per mutant",
          "shapes up to 65536 elements (the device default)"], ["given"]),
    ({"thorough_budget": 2000, "thorough_budget_source": runner.thorough_source(False, "cpu")},
     ["2000 examples (given (--thorough-budget))"], ["CPU default"]),
    ({"device": "cuda:0", "thorough_budget": 2000, "thorough_budget_source": runner.thorough_source(True, "cuda:0"),
      "max_elements_drawn": 4194304}, ["2000 examples (the GPU default", "up to 4194304 elements"], ["CPU"]),
    ({"max_elements": 4096, "max_elements_drawn": 4096, "thorough_budget": 0},
     ["shapes up to 4096 elements;", "survivors not run again (--thorough-budget 0)"], ["device default", "lse-thorough"]),
], ids=["cpu-default", "given", "gpu-default", "capped-no-rerun"])
def test_the_reports_state_the_budgets_and_the_device_scaling(config, says, never):
    report = _report(**config)
    line = budgets(report)
    markdown = markdown_report(report)
    for text in says:
        assert text in line and text in markdown
    for text in never:
        assert text not in line


def _options_of_a_run(monkeypatch, **kwargs) -> tuple:
    """The fuzzer's options of a run_mutation call and of its survivors' re-run (None: no re-run),
    taken where the mutants would be judged (nothing is fuzzed)."""
    seen = {}

    def fake_gate(run, timeout_factor, timeout_floor):
        return None

    def fake_judge_all(run, *rest):
        seen.update(options=run.options, thorough=run.thorough)
        raise _Stop

    monkeypatch.setattr(runner, "Gate", fake_gate)
    monkeypatch.setattr(runner, "_judge_all", fake_judge_all)
    with pytest.raises(_Stop):
        runner.run_mutation(str(TINY_DIR / "tiny_lse.py"), cache=None, jobs=1, **kwargs)
    return seen["options"], seen["thorough"]


def _options_of_a_run_on(monkeypatch, device: str, **kwargs) -> tuple:
    return _options_of_a_run(monkeypatch, options=mutation_options(device=device), **kwargs)


def test_a_mutants_examples_are_one_run(monkeypatch):
    """The CPU's default split of a check into parts would run a killed mutant's second part, and shrink
    there again; a mutant's examples are one run instead (the same count), on every device."""
    options, thorough = _options_of_a_run_on(monkeypatch, "cpu")
    assert part_count(options) == 1 and part_count(thorough) == 1
    assert options.budget == runner.DEFAULT_BUDGET
    assert part_count(replace(options, parts=None)) == 2  # what the CPU's default would have been


@pytest.mark.parametrize("given, expected", [
    (None, CPU_THOROUGH_BUDGET), (2000, 2000), (7, 7),
], ids=["cpu-default", "gpu-sized", "given"])
def test_run_mutate_sizes_the_rerun_to_the_device_unless_given(given, expected, monkeypatch):
    _, thorough = _options_of_a_run_on(monkeypatch, "cpu", thorough_budget=given)
    assert thorough.budget == expected and thorough.profile == "lse-thorough"


def test_no_rerun_when_the_thorough_budget_is_zero(monkeypatch):
    _, thorough = _options_of_a_run_on(monkeypatch, "cpu", thorough_budget=0)
    assert thorough is None
