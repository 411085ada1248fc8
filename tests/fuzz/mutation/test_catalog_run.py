"""End to end on the bundled catalog (``lse-fuzz mutants``): the gate, mutants graded on the worker
pool, the statuses of planted patches (equivalent, crash, hang, compile error), parts, the kill
matrix, and the command line.

These start worker processes, so budgets are small.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import defaults
from fuzz.cli import main
from fuzz.mutation import Patch, catalog, discover, mutation_options, run_mutation, validate_report, write_reports
from fuzz.mutation.report import stryker_report
from fuzz.mutation.sites import from_patch
from fuzz.outcomes import MutantStatus
from mutants import NAMES

ROOT = Path(__file__).resolve().parents[3]
BUDGET = 25
CATALOG = catalog()

# Planted patches of the reference with a known status: what each status looks like.
LAUNCHER = "    validate_input(x)\n    check_device(x)\n"
PLANTED = {
    "equivalent": (Patch("reference/_lse_kernel.py", "tl.exp2((x - shift[:, None]) * LOG2E)",
                         "tl.exp(x - shift[:, None])"), MutantStatus.SURVIVED),  # the same function, rounded
    "crash_abort": (Patch("reference/_lse_kernel.py", LAUNCHER, "    __import__('os').abort()\n" + LAUNCHER),
                    MutantStatus.RUNTIME_ERROR),
    "crash_segfault": (Patch("reference/_lse_kernel.py", LAUNCHER,  # address 16 is never mapped
                             "    __import__('ctypes').c_char.from_address(16).value\n" + LAUNCHER),
                       MutantStatus.RUNTIME_ERROR),
    "raises": (Patch("reference/_lse_kernel.py", LAUNCHER,  # what a failed launch raises on a GPU
                     "    raise RuntimeError('CUDA error: an illegal memory access was encountered')\n" + LAUNCHER),
               MutantStatus.RUNTIME_ERROR),
    "hang": (Patch("reference/_lse_kernel.py", LAUNCHER, "    while True:\n        __import__('time').sleep(60)\n"
                   + LAUNCHER), MutantStatus.TIMEOUT),
    "compile_error": (Patch("reference/_lse_combine.py", "row_max + tl.log(row_sum)",
                            "row_max + tl.logsumexp_that_does_not_exist(row_sum)"), MutantStatus.COMPILE_ERROR),
}


def planted(name: str):
    return from_patch(discover("reference:lse"), f"planted_{name}", PLANTED[name][0], pitfall="planted test double",
                      documented="tests/fuzz/mutation/test_catalog_run.py")


def test_planted_patches_are_classified_and_reported(tmp_path):
    # One run for all of them (the gate and the worker start-ups are the expensive part). The
    # equivalent mutant runs the whole budget, like the gate's baseline: twice the baseline leaves
    # room for a busy machine; the hang costs max(2 * baseline, 20 s), and once more after RETRY_FACTOR.
    chosen = [planted(name) for name in PLANTED] + ["no_max_added"]
    report = run_mutation(source="catalog", mutants=chosen, jobs=2, options=mutation_options(budget=BUDGET), timeout_factor=2.0,
                          timeout_floor=20.0, thorough_budget=0, cache=None, out_dir=tmp_path, exit_rule="all-killed")
    results = {r.name: r for r in report.results}
    statuses = {name: results[f"planted_{name}"].status for name in PLANTED}
    assert statuses == {name: status for name, (_, status) in PLANTED.items()}, \
        {n: results[f"planted_{n}"].reason[:300] for n in PLANTED}

    reasons = {name: results[f"planted_{name}"].reason for name in PLANTED}
    assert "SIGABRT" in reasons["crash_abort"]
    assert "SIGSEGV" in reasons["crash_segfault"]
    assert "CUDA error" in reasons["raises"]
    assert "logsumexp_that_does_not_exist" in reasons["compile_error"]
    # Stopped by the job's time limit, or first by the worker's deadline for one call (a mutant that
    # starts beside the gate has the gate's generous limit until the gate has measured its baseline).
    assert "time limit" in reasons["hang"] or "a hang" in reasons["hang"]
    assert "planted_hang" in report.retried  # a timeout is confirmed by a second run

    killed = results["no_max_added"]
    assert killed.status is MutantStatus.KILLED
    assert killed.killed_by == [CATALOG["no_max_added"].expected_check]
    assert killed.cell.examples >= 1 and killed.cell.seconds > 0
    assert killed.cell.counterexample.startswith("float32 (1, 1)")
    assert Path(killed.cell.reproducer).parent == tmp_path / "reproducers"
    assert "--impl mutants.patched:no_max_added" in killed.reason  # a replay line that loads the mutant again

    # Detected: the killed mutant and the hang. Valid: those two and the equivalent one.
    assert (report.detected, report.valid) == (2, 3)
    assert report.score == pytest.approx(200 / 3)
    assert report.exit_code == 1  # every mutant must be killed
    assert all(g.ok for g in report.gate) and len(report.gate) == 2
    assert report.timeout_seconds == pytest.approx(max(2 * report.baseline_seconds, 20.0))

    paths = write_reports(report, tmp_path)
    data = json.loads(paths["json"].read_text())
    validate_report(data)
    by_id = {m["id"]: m for f in data["files"].values() for m in f["mutants"]}
    assert by_id["planted_hang"]["status"] == "Timeout" and by_id["planted_compile_error"]["status"] == "CompileError"
    # A bundled mutant is located by its patch in the reference file it edits.
    assert by_id["no_max_added"]["replacement"] == CATALOG["no_max_added"].patch.replacement
    assert by_id["no_max_added"] in data["files"]["reference/_lse_combine.py"]["mutants"]
    assert "planted_equivalent" in paths["markdown"].read_text()
    assert "mutation-test-report-app" in paths["html"].read_text()


def test_the_gate_refuses_to_score_when_the_kernel_fails_the_fuzzer(tmp_path):
    """A kernel that is wrong as it stands (here: the tiny kernel without its row max added back)
    fails the gate: nothing is scored, and the message names the check that caught it."""
    from fuzz.mutation import GateFailure

    source = (ROOT / "tests" / "implementations" / "mutate" / "tiny_lse.py").read_text()
    broken = tmp_path / "broken_lse.py"
    broken.write_text(source.replace("row_max + tl.log(row_sum)", "tl.log(row_sum)"))
    with pytest.raises(GateFailure) as failure:
        run_mutation(f"{broken}:lse", operators=["cdiv_floored"], jobs=2, cache=None,
                     options=mutation_options(budget=BUDGET, contract="finite", output_dtype="float32"))
    text = str(failure.value)
    assert "no mutant was scored" in text
    assert f"FAILED: the unmutated kernel ({broken}:lse) must pass: caught by '" in text
    assert len(failure.value.gate) == 2


def test_in_parts_a_mutant_runs_its_parts_in_turn_and_stops_at_the_first_failure(tmp_path):
    report = run_mutation(source="catalog", mutants=["no_max_added", "nan_ignored"], jobs=2,
                          options=mutation_options(budget=2 * BUDGET, parts=2), cache=None, thorough_budget=0)
    assert report.config["parts"] == 2
    correct = report.gate[0]
    assert correct.ok and [p["verdict"] for p in correct.cell.record.parts] == ["pass", "pass"]
    assert correct.cell.examples == 2 * BUDGET
    for result in report.results:
        assert result.status is MutantStatus.KILLED, result.reason[:300]
        ran = result.cell.record.parts
        assert ran[-1]["verdict"] == "fail" and all(p["verdict"] == "pass" for p in ran[:-1])
        assert result.cell.seconds == pytest.approx(sum(p["check_seconds"] for p in ran))


@pytest.mark.parametrize("seconds", [0.0, defaults.MUTANT_SHRINK_SECONDS])
def test_a_killed_mutants_failure_is_shrunk_within_the_mutation_budget(seconds):
    report = run_mutation(source="catalog", mutants=["no_max_added"], jobs=2, cache=None, thorough_budget=0,
                          options=mutation_options(budget=BUDGET, shrink_seconds=seconds))
    (result,) = report.results
    assert result.status is MutantStatus.KILLED, result.reason[:300]
    record = result.cell.record
    assert record.options["shrink_seconds"] == seconds
    costs = record.costs
    assert costs["seconds"]["shrinking"] <= seconds + 2.0  # one shrink step may run past the budget
    if seconds == 0:
        assert costs["shrink_steps"] <= 1


def test_the_kill_matrix_runs_every_check_alone(tmp_path):
    chosen = ["agreement", "input_unchanged", "determinism"]
    report = run_mutation(source="catalog", mutants=["input_as_scratch"], jobs=2, matrix=True,
                          options=mutation_options(budget=8, checks=tuple(chosen)), cache=tmp_path / "cache")
    result = report.results[0]
    assert set(result.matrix) == set(chosen)
    assert "input_unchanged" in result.killed_by
    assert result.matrix["agreement"].status is MutantStatus.SURVIVED  # its answers are right
    assert result.status is MutantStatus.KILLED and not report.thorough  # no re-run in a matrix
    validate_report(json.loads(json.dumps(stryker_report(report))))


def test_cli_lists_the_mutants(capsys):
    assert main(["mutants", "--list"]) == 0
    out = capsys.readouterr().out
    for name, mutant in CATALOG.items():
        assert name in out and f"(expected check: {mutant.expected_check})" in out
    assert f"{len(NAMES)} mutants" in out


@pytest.mark.parametrize(("args", "message"), [
    (["no_such_mutant"], "lse-fuzz: error: mutant 'no_such_mutant' is not a mutant of reference:lse; "
                         "see lse-fuzz mutants --list."),
    (["--budget", "0"], "lse-fuzz: error: --budget=0; expected an int >= 1."),
    (["--jobs", "0"], "lse-fuzz: error: --jobs=0; expected an int >= 1."),
    (["--parts", "0"], "lse-fuzz: error: --parts=0; expected an int >= 1."),
    (["--mutant-timeout-floor", "0"], "lse-fuzz: error: --mutant-timeout-floor=0.0; expected a number >= 1."),
    (["--shrink-seconds", "-1"], "lse-fuzz: error: --shrink-seconds=-1.0; expected a number of seconds >= 0."),
    (["no_max_added", "no_max_added"], "lse-fuzz: error: mutants: no_max_added given twice"),
    (["--checks", "agreement,nope"], "lse-fuzz: error: --checks=['agreement', 'nope']: unknown 'nope'; choose from"),
    (["--show", "nope"], "lse-fuzz: error: --show='nope' is not a mutant; choose from: no_max_added"),
], ids=["unknown mutant", "budget", "jobs", "parts", "timeout floor", "shrink seconds", "duplicate", "unknown check",
        "show unknown"])
def test_cli_bad_arguments_exit_2_with_one_line(args, message, capsys, tmp_path):
    assert main(["mutants", *args, "-q", "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_cli_end_to_end_writes_every_report(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-m", "fuzz", "mutants", "tail_mask_off_by_one", "--budget", "10",
                             "-j", "2", "--no-cache", "--out-dir", str(tmp_path)], capture_output=True, text=True,
                            cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tail_mask_off_by_one" in result.stdout and "Killed" in result.stdout
    validate_report(json.loads((tmp_path / "mutation.json").read_text()))
    assert "score 100.0%" in (tmp_path / "mutation.md").read_text()
    assert (tmp_path / "mutation.html").is_file()


def test_cli_shows_a_mutants_patch_as_a_diff(capsys):
    assert main(["mutants", "--show", "tail_mask_off_by_one"]) == 0
    out = capsys.readouterr().out
    assert out == CATALOG["tail_mask_off_by_one"].diff()
    assert out.startswith("--- a/reference/") and "+" in out and "cols <= col_end" in out
