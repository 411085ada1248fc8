"""The reports: Stryker JSON valid against the published schema (and a corrupted one is not),
the Markdown summary, the score and the exit code. Built from hand-made results, no workers."""

from __future__ import annotations

import copy
import io
import json

from pathlib import Path

import pytest

from fuzz.checks import CHECKS
from fuzz.mutation import MutantResult, MutationReport, catalog, discover, validate_report, write_reports
from fuzz.mutation.report import SCHEMA_PATH, markdown_report, rich_tables, schema, stryker_report
from fuzz.mutation.judge import no_coverage_cell
from fuzz.grading import GradeRecord
from fuzz.mutation.results import Cell, ExitRule, GateResult, TestsVerdict
from fuzz.outcomes import MutantStatus, Verdict

MUTANTS = catalog()
KERNEL = discover("reference:lse")

# An optional dependency (the `report` extra): a machine without it skips these tests.
jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[3]

# A grading record (what the worker pool's job returns) for each status.
RECORDS = {
    MutantStatus.KILLED: {"verdict": "fail", "check": "agreement", "examples": 12, "result": {"seconds": 1.5},
                          "details": "check 'agreement' failed: row 0 differs\n  replay:   lse-fuzz replay x.pt",
                          "counterexample": {"description": "float32 (1, 3) contiguous on cpu; rows: 1 x zeros"}},
    MutantStatus.SURVIVED: {"verdict": "pass", "examples": 200, "result": {"seconds": 20.0}},
    MutantStatus.TIMEOUT: {"verdict": "timeout", "reason": "the grader stopped it: no result within the time limit "
                                                           "of 30 s: its driver was killed"},
    MutantStatus.RUNTIME_ERROR: {"verdict": "crash", "reason": "crashed: the worker was killed by SIGSEGV",
                                 "details": "Fatal Python error: Segmentation fault"},
    MutantStatus.COMPILE_ERROR: {"verdict": "error", "examples": 1, "reason": "InterpreterError raised",
                                 "exception": [{"type": "triton.runtime.errors.InterpreterError",
                                                "mro": ["triton.runtime.errors.InterpreterError"]}]},
}


def _graded(fields: dict) -> GradeRecord:
    """A grading record of a mutant with ``fields`` (the verdict's text among them)."""
    return GradeRecord(candidate="m", target="m", sha256=None, key="k",
                       **{name: Verdict(value) if name == "verdict" else copy.deepcopy(value)
                          for name, value in fields.items()})


def _cell(status: MutantStatus, checks=()) -> Cell:
    cell = Cell(tuple(checks), _graded(RECORDS[status]), wall_seconds=3.0)
    assert cell.status is status
    return cell


def _report(statuses, *, matrix=False) -> MutationReport:
    results = []
    for mutant, status in zip(MUTANTS.values(), statuses):
        cell = _cell(status)
        by_check = None
        if matrix:
            by_check = {name: _cell(status if name == mutant.expected_check else MutantStatus.SURVIVED, (name,))
                        for name in CHECKS}
        results.append(MutantResult(mutant, cell, matrix=by_check))
    gate = [GateResult("the unmutated kernel", "reference:lse", "pass", _cell(MutantStatus.SURVIVED)),
            GateResult("the kernel + 1", "reference:lse", "fail", _cell(MutantStatus.KILLED))]
    config = {"budget": 250, "seed": 0, "device": "cpu", "contract": "strict", "declared_contract": "strict",
              "jobs": 2, "matrix": matrix, "max_elements": None, "max_elements_drawn": 65536, "thorough_budget": 0,
              "thorough_budget_source": "none", "tests": None}
    return MutationReport(results=results, gate=gate, config=config, baseline_seconds=20.0, timeout_seconds=60.0,
                          gate_seconds=25.0, mutation_seconds=70.0, setup_seconds=0.5, matrix=matrix, kernel=KERNEL,
                          command="reference:lse", exit_rule=ExitRule.ALL_KILLED)


ALL_STATUSES = [MutantStatus.KILLED, MutantStatus.SURVIVED, MutantStatus.TIMEOUT, MutantStatus.RUNTIME_ERROR,
                MutantStatus.COMPILE_ERROR, MutantStatus.KILLED]


def test_the_schema_is_the_published_one():
    data = schema()
    assert data["$id"] == "http://stryker-mutator.io/report.schema.json"
    assert data["properties"]["files"]["additionalProperties"]["properties"]["mutants"]["items"]["properties"][
        "status"]["enum"] == ["Killed", "Survived", "NoCoverage", "CompileError", "RuntimeError", "Timeout",
                              "Ignored", "Pending"]
    assert SCHEMA_PATH.name == "mutation-testing-report-schema.json"


@pytest.mark.parametrize("matrix", [False, True], ids=["plain", "matrix"])
def test_the_json_report_is_valid_against_the_schema(matrix):
    data = stryker_report(_report(ALL_STATUSES, matrix=matrix))
    validate_report(json.loads(json.dumps(data)))  # what a file holds, not Python objects
    first = data["files"][MUTANTS["no_max_added"].file]
    mutant = first["mutants"][0]
    assert mutant["mutatorName"] == "no_max_added"
    assert MUTANTS["no_max_added"].pitfall in mutant["description"]
    assert "expected check: shift_invariance" in mutant["description"]
    killed_by = [MUTANTS["no_max_added"].expected_check] if matrix else ["agreement"]
    assert mutant["killedBy"] == killed_by and mutant["status"] == "Killed"
    assert "row 0 differs" in mutant["statusReason"]
    path = MUTANTS["no_max_added"].location()[0]
    assert first is data["files"][path] and first["source"] == (ROOT / path).read_text()
    assert {t["id"] for t in data["testFiles"]["fuzz/checks/__init__.py"]["tests"]} == set(CHECKS)


def test_a_mutants_location_is_the_span_its_patch_replaces():
    mutant = MUTANTS["no_max_added"]
    data = stryker_report(_report([MutantStatus.KILLED]))
    entry = data["files"][mutant.location()[0]]["mutants"][0]
    start, end = entry["location"]["start"], entry["location"]["end"]
    line = data["files"][mutant.location()[0]]["source"].splitlines()[start["line"] - 1]
    assert line[start["column"] - 1:end["column"] - 1] == mutant.patch.anchor
    assert entry["replacement"] == mutant.patch.replacement


CORRUPTIONS = [
    ("unknown status", lambda d: _first_mutant(d).__setitem__("status", "Dead")),
    ("no files", lambda d: d.pop("files")),
    ("line 0", lambda d: _first_mutant(d)["location"]["start"].__setitem__("line", 0)),
    ("killedBy not a list", lambda d: _first_mutant(d).__setitem__("killedBy", "agreement")),
    ("threshold above 100", lambda d: d["thresholds"].__setitem__("high", 101)),
    ("schema version 3", lambda d: d.__setitem__("schemaVersion", "3")),
    ("mutant without id", lambda d: _first_mutant(d).pop("id")),
    ("file without source", lambda d: next(iter(d["files"].values())).pop("source")),
]


def _first_mutant(data: dict) -> dict:
    return next(f for f in data["files"].values() if f["mutants"])["mutants"][0]


@pytest.mark.parametrize("corrupt", [c[1] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_a_corrupted_report_is_rejected(corrupt):
    data = copy.deepcopy(stryker_report(_report(ALL_STATUSES)))
    corrupt(data)
    with pytest.raises(jsonschema.ValidationError):
        validate_report(data)


def test_score_is_detected_over_valid_and_the_exit_code_wants_every_mutant_killed():
    report = _report(ALL_STATUSES)
    # Killed x2 + Timeout detected; Survived undetected; RuntimeError and CompileError not valid.
    assert (report.detected, report.valid) == (3, 4)
    assert report.score == pytest.approx(75.0)
    assert report.exit_code == 1
    assert _report([MutantStatus.KILLED] * 3).exit_code == 0
    assert _report([MutantStatus.KILLED, MutantStatus.TIMEOUT]).exit_code == 1  # detected, but not killed
    assert _report([MutantStatus.COMPILE_ERROR]).score is None


def test_the_markdown_summary_is_a_pull_request_comment():
    text = markdown_report(_report(ALL_STATUSES))
    assert text.startswith("## ❌ lse-fuzz mutation analysis of `reference:lse`: score 75.0%")
    assert "| `no_max_added` |" in text and "| Killed | `agreement` |" in text
    assert "detected = Killed + Timeout" in text and "The run fails unless every mutant is Killed." in text
    assert "### Survivors: look here" in text and "**`masked_lanes_zero`**" in text  # with its diff
    assert "<summary><code>hardcoded_row_stride</code>: RuntimeError</summary>" in text
    assert "SIGSEGV" in text  # the reason of the crashed one
    assert "### Kill matrix" not in text


def test_the_markdown_matrix_shows_weight_and_single_check_mutants():
    text = markdown_report(_report([MutantStatus.KILLED] * 3, matrix=True))
    assert "### Kill matrix" in text and "| **mutants killed** |" in text
    only = MUTANTS["no_max_added"].expected_check
    assert f"Caught by a single check: `no_max_added` (only `{only}`)" in text


def test_the_terminal_tables_render():
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200)
    for table in rich_tables(_report(ALL_STATUSES, matrix=True)):
        console.print(table)
    out = console.file.getvalue()
    assert "Kill matrix" in out and "no_max_added" in out and "Survived" in out


def test_write_puts_every_report_in_the_directory(tmp_path):
    paths = write_reports(_report(ALL_STATUSES), tmp_path / "out")
    validate_report(json.loads(paths["json"].read_text()))
    assert paths["markdown"].read_text().startswith("## ")
    assert "mutation-test-report-app" in paths["html"].read_text()


@pytest.mark.parametrize(("fail_under", "code"), [(None, 0), (80.0, 1), (75.0, 0), (70.0, 0)],
                         ids=["no-threshold", "below", "at", "above"])
def test_the_fail_under_rule_compares_the_score(fail_under, code):
    report = _report(ALL_STATUSES)  # score 75
    report.exit_rule, report.fail_under = ExitRule.FAIL_UNDER, fail_under
    assert report.exit_code == code


def test_an_uncovered_mutant_is_no_coverage_with_its_reason():
    cell = Cell((), _graded({"verdict": "not_run", "reason": "the mutated line never ran"}), 0.0)
    assert cell.status is MutantStatus.NO_COVERAGE and cell.reason == "the mutated line never ran"
    assert not MutantStatus.NO_COVERAGE.detected and MutantStatus.NO_COVERAGE.valid


UNSUPPORTED = ("UNSUPPORTED on the CPU: the kernel uses tl.inline_asm_elementwise, which the CPU's emulation of "
               "Triton cannot run as a GPU does (inline GPU assembly has no CPU meaning); run with --device cuda for "
               "a verdict")


def test_a_mutant_the_cpu_cannot_run_is_ignored_neither_killed_nor_survived():
    cell = Cell((), _graded({"verdict": "unsupported", "examples": 1, "reason": UNSUPPORTED,
                             "details": UNSUPPORTED + "\n  during:   the first call"}), 2.0)
    assert cell.status is MutantStatus.IGNORED and cell.reason.startswith(UNSUPPORTED)
    report = _report([MutantStatus.KILLED, MutantStatus.SURVIVED])
    report.results.append(MutantResult(MUTANTS["hardcoded_row_stride"], cell))
    assert (report.detected, report.valid, report.score) == (1, 2, 50.0)  # out of the score
    assert report.count(MutantStatus.IGNORED) == 1 and "1 Ignored" in report.summary()
    data = stryker_report(report)
    validate_report(json.loads(json.dumps(data)))  # Stryker's own status for a mutant not judged
    entry = next(m for f in data["files"].values() for m in f["mutants"] if m["id"] == "hardcoded_row_stride")
    assert entry["status"] == "Ignored" and "tl.inline_asm_elementwise" in entry["statusReason"]
    assert "killedBy" not in entry
    text = markdown_report(report)
    assert "### Ignored: the CPU cannot run a construct" in text
    assert "* `hardcoded_row_stride`: UNSUPPORTED on the CPU: the kernel uses tl.inline_asm_elementwise" in text
    assert "<summary><code>hardcoded_row_stride</code>" not in text  # not among the timeouts and errors
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200)
    for table in rich_tables(report):
        console.print(table)
    assert "Ignored" in console.file.getvalue()


def test_a_cached_record_is_read_back_and_one_of_an_older_release_is_judged_again():
    cell = _cell(MutantStatus.KILLED)
    again = Cell.kept(cell.record.to_json(), 3.0)
    assert again == cell and again.status is MutantStatus.KILLED
    # Cached before not_run: a bare "pass" marked no_coverage, not a grading record.
    assert Cell.kept({"verdict": "pass", "no_coverage": True, "reason": "the mutated line never ran"}, 0.0) is None


def test_a_mutant_that_never_ran_is_not_recorded_as_a_pass():
    cell = no_coverage_cell(next(iter(MUTANTS.values())), "cpu")
    assert cell.record.verdict is Verdict.NOT_RUN and cell.status is MutantStatus.NO_COVERAGE
    assert Cell.kept(cell.record.to_json(), 0.0) == cell  # as the verdict cache keeps it


@pytest.mark.parametrize("record, status", [
    ({"exit": None, "timeout": True, "seconds": 1.0, "output": ""}, MutantStatus.TIMEOUT),
    ({"exit": 1, "timeout": False, "seconds": 1.0, "output": ""}, MutantStatus.KILLED),
    ({"exit": 0, "timeout": False, "seconds": 1.0, "output": ""}, MutantStatus.SURVIVED),
], ids=["timeout", "killed", "survived"])
def test_the_tests_verdict_reads_its_record(record, status):
    assert TestsVerdict.of(record).status is status


def test_a_gpu_crash_the_memory_phase_did_not_explain_says_what_the_phase_ran_and_why():
    # A kernel fault on a GPU is handed to the memory phase; one it could not confirm stays a
    # RuntimeError, and its reason must say why (a probe that raised, a tool stopped at its limit).
    memory = {"ran": "compute-sanitizer memcheck, initcheck", "seconds": 19.8, "waited": 7.7, "probes": 3,
              "finding": None, "notes": ["a probe raised under memcheck: OutOfMemoryError"], "replay": ""}
    fields = dict(RECORDS[MutantStatus.RUNTIME_ERROR], reason="crashed: AcceleratorError: CUDA error: an illegal "
                                                             "memory access was encountered", memory=memory)
    cell = Cell((), _graded(fields), 3.0)
    assert cell.status is MutantStatus.RUNTIME_ERROR
    assert "memory:   compute-sanitizer memcheck, initcheck on 3 probes" in cell.reason
    assert "a probe raised under memcheck: OutOfMemoryError" in cell.reason
    assert "memory:" not in _cell(MutantStatus.RUNTIME_ERROR).reason  # no phase ran on the CPU
