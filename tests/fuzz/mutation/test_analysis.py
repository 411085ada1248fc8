"""End to end: the gate, every mutant graded on the worker pool, the statuses of planted doubles
(equivalent, crash, hang, compile error), the kill matrix, and the ``lse-fuzz mutants`` command.

These start worker processes, so budgets are small.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from planted import planted_mutant as planted

from fuzz.mutation import (Cell, GateFailure, GateResult, run_mutation_analysis, stryker_report, validate_report,
                           write_reports)
from fuzz.outcomes import MutantStatus
from mutants import MUTANTS

ROOT = Path(__file__).resolve().parents[3]
BUDGET = 25

PLANTED_STATUS = {
    "equivalent": MutantStatus.SURVIVED,
    "crash_abort": MutantStatus.RUNTIME_ERROR,
    "crash_segfault": MutantStatus.RUNTIME_ERROR,
    "raises": MutantStatus.RUNTIME_ERROR,
    "hang": MutantStatus.TIMEOUT,
    "compile_error": MutantStatus.COMPILE_ERROR,
}


def test_planted_doubles_are_classified_and_reported(tmp_path):
    # One analysis for all of them (the gate and the worker start-ups are the expensive part).
    chosen = [planted(name) for name in PLANTED_STATUS] + [MUTANTS["no_max_added"]]
    # The equivalent mutant runs the whole budget, like the gate's baseline: twice the baseline
    # leaves room for a busy machine; the hang costs max(2 * baseline, 20 s).
    report = run_mutation_analysis(chosen, jobs=2, budget=BUDGET, seed=0, timeout_factor=2.0,
                                   timeout_floor=20.0, out_dir=tmp_path)
    results = {r.name: r for r in report.results}

    statuses = {name: results[f"planted_{name}"].status for name in PLANTED_STATUS}
    assert statuses == PLANTED_STATUS, {n: results[f"planted_{n}"].reason[:300] for n in PLANTED_STATUS}

    reasons = {name: results[f"planted_{name}"].reason for name in PLANTED_STATUS}
    assert "SIGABRT" in reasons["crash_abort"]
    assert "SIGSEGV" in reasons["crash_segfault"]
    assert "CUDA error" in reasons["raises"]
    assert "logsumexp_that_does_not_exist" in reasons["compile_error"]
    assert "time limit" in reasons["hang"]

    killed = results["no_max_added"]
    assert killed.status is MutantStatus.KILLED
    assert killed.killed_by == [MUTANTS["no_max_added"].expected_check]
    assert killed.examples >= 1 and killed.seconds > 0
    assert killed.cell.counterexample.startswith("float32 (1, 1)")
    assert Path(killed.cell.reproducer).parent == tmp_path / "reproducers"
    assert f"--impl {MUTANTS['no_max_added'].target}" in killed.reason

    # Detected: the killed mutant and the hang. Valid: those two and the equivalent one.
    assert (report.detected, report.valid) == (2, 3)
    assert report.score == pytest.approx(200 / 3)
    assert report.exit_code == 1
    assert all(g.ok for g in report.gate) and len(report.gate) == 2
    assert report.timeout_seconds == pytest.approx(max(2 * report.baseline_seconds, 20.0))

    paths = write_reports(report, tmp_path)
    data = json.loads(paths["json"].read_text())
    validate_report(data)
    by_id = {m["id"]: m for f in data["files"].values() for m in f["mutants"]}
    assert by_id["planted_hang"]["status"] == "Timeout" and by_id["planted_compile_error"]["status"] == "CompileError"
    assert any(key.endswith("tests/implementations/mutants/hang.py") for key in data["files"])
    # A bundled mutant is located by its patch in the reference file it edits.
    assert by_id["no_max_added"]["replacement"] == MUTANTS["no_max_added"].patch.replacement
    assert "reference/_lse_combine.py" in data["files"]
    assert "planted_equivalent" in paths["markdown"].read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".work-")]


def test_the_gate_refuses_to_score_when_the_suite_cannot_tell_right_from_wrong(tmp_path):
    broken = MUTANTS["no_max_added"].target
    with pytest.raises(GateFailure) as failure:
        run_mutation_analysis(["masked_lanes_zero"], jobs=2, budget=BUDGET, out_dir=tmp_path,
                              gate_correct=[("a broken kernel posing as correct", broken)],
                              gate_broken=[("the correct kernel posing as broken", "reference:lse")])
    text = str(failure.value)
    assert "no mutant was scored" in text
    assert f"FAILED: a broken kernel posing as correct ({broken}) must pass: caught by '" in text
    assert "FAILED: the correct kernel posing as broken (reference:lse) must fail: passed" in text
    assert len(failure.value.gate) == 2


def test_in_parts_the_gate_runs_a_correct_kernels_parts_side_by_side(tmp_path):
    # What a GPU run does by default (parts=4 there): here forced on the CPU, with two parts.
    report = run_mutation_analysis(["no_max_added", "nan_ignored"], jobs=2, budget=2 * BUDGET, parts=2,
                                   out_dir=tmp_path)
    assert report.config["parts"] == 2
    correct = [g for g in report.gate if g.must == "pass"]
    assert len(correct) == 1 and all(g.ok for g in correct)
    for entry in correct:
        assert [p["verdict"] for p in entry.cell.record["parts"]] == ["pass", "pass"]
        assert entry.cell.examples == 2 * BUDGET
        assert entry.cell.wall_seconds == pytest.approx(sum(p["seconds"] for p in entry.cell.record["parts"]), rel=0.2)
    assert report.baseline_seconds == max(g.cell.wall_seconds for g in correct)
    broken = next(g for g in report.gate if g.must == "fail")
    assert broken.ok and len(broken.cell.record["parts"]) == 1  # caught in its first part: the second never ran
    for result in report.results:
        assert result.status is MutantStatus.KILLED, result.reason[:300]
        ran = result.cell.record["parts"]
        assert ran[-1]["verdict"] == "fail" and all(p["verdict"] == "pass" for p in ran[:-1])
        assert result.seconds == pytest.approx(sum(p["check_seconds"] for p in ran))


def test_the_kill_matrix_runs_every_check_alone(tmp_path):
    chosen = ["agreement", "input_unchanged", "determinism"]
    report = run_mutation_analysis(["input_as_scratch"], jobs=2, budget=8, matrix=True,
                                   checks=chosen, out_dir=tmp_path)
    result = report.results[0]
    assert set(result.matrix) == set(chosen)
    assert "input_unchanged" in result.killed_by
    assert result.matrix["agreement"].status is MutantStatus.SURVIVED  # its answers are right
    assert result.status is MutantStatus.KILLED
    validate_report(json.loads(json.dumps(stryker_report(report))))


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "fuzz", "mutants", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)


def test_cli_lists_the_mutants(capsys):
    from fuzz.cli import main

    assert main(["mutants", "--list"]) == 0
    out = capsys.readouterr().out
    for name, mutant in MUTANTS.items():
        assert name in out and mutant.expected_check in out


@pytest.mark.parametrize(("args", "message"), [
    (["no_such_mutant"], "lse-fuzz: error: mutant 'no_such_mutant' is not in mutants.MUTANTS; choose from: "),
    (["--budget", "0"], "lse-fuzz: error: --budget=0; expected an int >= 1."),
    (["--jobs", "0"], "lse-fuzz: error: --jobs=0; expected an int >= 1."),
    (["--parts", "0"], "lse-fuzz: error: --parts=0; expected an int >= 1."),
    (["--timeout-floor", "0"], "lse-fuzz: error: --timeout-floor=0.0; expected a number >= 1."),
    (["no_max_added", "no_max_added"], "lse-fuzz: error: mutants: no_max_added given twice"),
    (["--checks", "agreement,nope"], "lse-fuzz: error: --checks=['agreement', 'nope']: unknown 'nope'; choose from"),
    (["--show", "nope"], "lse-fuzz: error: --show='nope' is not a mutant; choose from: no_max_added"),
], ids=["unknown mutant", "budget", "jobs", "parts", "timeout floor", "duplicate", "unknown check", "show unknown"])
def test_cli_bad_arguments_exit_2_with_one_line(args, message, capsys, tmp_path):
    from fuzz.cli import main

    assert main(["mutants", *args, "--no-progress", "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_cli_gate_failure_exits_2_with_the_gate_report(monkeypatch, capsys):
    from fuzz.commands import mutants as command

    cell = Cell((), {"verdict": "fail", "check": "agreement", "details": "check 'agreement' failed: row 0 differs"},
                1.0)
    gate = [GateResult("reference.lse", "reference:lse", "pass", cell)]

    def fail(*args, **kwargs):
        raise GateFailure(gate)

    monkeypatch.setattr("fuzz.mutation.run_mutation_analysis", fail)
    args = SimpleNamespace(list=False, show=None, names=[], jobs=1, budget=1, seed=0, device=None, contract="strict",
                           timeout_factor=1.0, timeout_floor=1.0, matrix=False, checks=None, out_dir=".",
                           max_elements=None, parts=None, show_progress=False)
    assert command.run(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("lse-fuzz: error: the fuzz suite failed the gate, so no mutant was scored:")
    assert "FAILED: reference.lse (reference:lse) must pass: caught by 'agreement'" in err
    assert "row 0 differs" in err


def test_cli_end_to_end_writes_both_reports(tmp_path):
    result = _cli("tail_mask_off_by_one", "--budget", "10", "-j", "2", "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tail_mask_off_by_one" in result.stdout and "Killed" in result.stdout
    validate_report(json.loads((tmp_path / "mutation.json").read_text()))
    assert "score 100.0%" in (tmp_path / "mutation.md").read_text()


def test_cli_shows_a_mutants_patch_as_a_diff(capsys):
    from fuzz.cli import main

    assert main(["mutants", "--show", "tail_mask_off_by_one"]) == 0
    out = capsys.readouterr().out
    assert out == MUTANTS["tail_mask_off_by_one"].diff()
    assert out.startswith("--- a/reference/") and "+" in out and "cols <= col_end" in out
