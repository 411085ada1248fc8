"""The benchmark scripts' own logic (their GPU figures come from runs, not from tests)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOUBLES = ROOT / "tests" / "fuzz" / "doubles" / "__init__.py"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _campaign(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fuzz_campaign.py"), "--device", "cpu", "--workers", "2",
         "--reproducer-dir", str(tmp_path), *args],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )


def test_a_campaign_of_a_correct_implementation_passes_and_counts_every_chunk(tmp_path):
    report = tmp_path / "campaign.json"
    run = _campaign("--impl", f"{DOUBLES}:lse_float64", "--examples", "30", "--chunk", "10", "--out", str(report),
                    tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASSED: 30 examples" in run.stdout
    assert '"examples": 30' in report.read_text()


def test_a_campaign_stops_at_a_failing_chunk_with_its_counterexample(tmp_path):
    run = _campaign("--impl", f"{DOUBLES}:hardcoded_row_stride", "--examples", "40", "--chunk", "20",
                    tmp_path=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAILED" in run.stdout and "check 'agreement' failed" in run.stdout and "replay:" in run.stdout


def test_a_deadline_reports_the_examples_not_run(tmp_path):
    run = _campaign("--impl", f"{DOUBLES}:lse_float64", "--examples", "40", "--chunk", "5", "--deadline", "0",
                    tmp_path=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "INCOMPLETE" in run.stdout and "not started" in run.stdout


def test_each_copy_of_a_candidate_differs_inside_every_function_body():
    distinct_copy = _load("grade_at_scale").distinct_copy
    source = (ROOT / "tests" / "fuzz" / "candidates" / "triton_two_pass.py").read_text()
    first, second = distinct_copy(source, "copy 0"), distinct_copy(source, "copy 1")
    for copy, label in ((first, "copy 0"), (second, "copy 1")):
        tree = ast.parse(copy)  # still a valid module, docstrings intact
        lines = copy.splitlines()
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        assert functions
        for function in functions:
            # The kernel's own source (what Triton keys its cache on) carries the label.
            body = "\n".join(lines[function.lineno - 1:function.end_lineno])
            assert f"# {label}" in body, function.name
    assert distinct_copy("def f(:\n", "copy 0").startswith("# copy 0\n")  # unparsable stays unparsable
