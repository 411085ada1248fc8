"""The benchmark scripts' own logic (their GPU figures come from runs, not from tests)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOUBLES = ROOT / "tests" / "implementations" / "doubles" / "__init__.py"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _campaign(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "campaign.py"), "--workers", "2", "--out", str(tmp_path / "c.jsonl"),
         *args, "--", "--device", "cpu"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )


def test_a_campaign_of_correct_implementations_passes_and_counts_every_run(tmp_path):
    run = _campaign(f"{DOUBLES}:lse_float64", "reference:lse", "--seeds", "2", "--budget", "5", tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASSED: 4 runs, 20 examples, 0 not passed" in run.stdout
    records = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert sorted((r["target"].rpartition(":")[2], r["seed"]) for r in records) == [
        ("lse", 0), ("lse", 1), ("lse_float64", 0), ("lse_float64", 1)]


def test_a_campaign_reports_a_failure_with_its_counterexample_and_resumes(tmp_path):
    run = _campaign(f"{DOUBLES}:hardcoded_row_stride", "--seeds", "2", "--budget", "40", tmp_path=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAILED" in run.stdout and "check 'agreement' failed" in run.stdout and "replay:" in run.stdout
    again = _campaign(f"{DOUBLES}:hardcoded_row_stride", "--seeds", "3", "--budget", "40", "--resume",
                      tmp_path=tmp_path)
    assert "2 runs resumed, 1 to run" in again.stdout
    assert len((tmp_path / "c.jsonl").read_text().splitlines()) == 3


def test_resume_knows_a_run_recorded_with_a_relative_path(tmp_path):
    # A campaign run from the repository's root records tests/...; one given the same folder
    # another way (absolute, or from elsewhere) must still skip those runs.
    implementation = tmp_path / "impls" / "mine.py"
    implementation.parent.mkdir()
    implementation.write_text(DOUBLES.read_text())
    (tmp_path / "c.jsonl").write_text(json.dumps({
        "target": "impls/mine.py:lse_float64", "seed": 0, "verdict": "pass", "check": None, "examples": 5,
        "seconds": 1.0, "reason": "", "details": None, "replay": None, "slow": []}) + "\n")
    run = _campaign(f"{implementation}:lse_float64", "--seeds", "2", "--budget", "5", "--resume", tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 runs resumed, 1 to run" in run.stdout and "PASSED: 2 runs, 10 examples" in run.stdout


def test_a_deadline_reports_the_runs_not_started(tmp_path):
    run = _campaign(f"{DOUBLES}:lse_float64", "--seeds", "6", "--budget", "5", "--deadline", "0", tmp_path=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "INCOMPLETE" in run.stdout and "runs not started" in run.stdout


NARROW = """
import torch


def lse(x):
    out = torch.logsumexp(x.double(), 1)
    out = out if x.dtype == torch.float64 else out.float()
    return out + 1 if x.shape[1] > 8 else out  # wrong past 8 columns, as its contract says
"""


def test_a_contract_declared_beside_a_file_is_the_one_its_runs_check(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "narrow.py").write_text(NARROW)
    undeclared = _campaign(str(corpus), "--seeds", "1", "--budget", "30", tmp_path=tmp_path)
    assert undeclared.returncode == 1, undeclared.stdout + undeclared.stderr
    (corpus / "contracts.json").write_text(json.dumps({"narrow.py": {"max_n": 8, "why": "a test"}}))
    declared = _campaign(str(corpus), "--seeds", "1", "--budget", "30", tmp_path=tmp_path)
    assert declared.returncode == 0, declared.stdout + declared.stderr
    assert "narrow.py declares (contracts.json): " in declared.stdout and "N <= 8" in declared.stdout
    (corpus / "contracts.json").write_text(json.dumps({"narrow.py": {"max_cols": 8}}))
    unknown = _campaign(str(corpus), "--seeds", "1", "--budget", "30", tmp_path=tmp_path)
    assert unknown.returncode == 2 and "narrow.py declares ['max_cols']" in unknown.stderr


def test_each_copy_of_a_candidate_differs_inside_every_function_body():
    distinct_copy = _load("grade_at_scale").distinct_copy
    source = (ROOT / "tests" / "implementations" / "candidates" / "triton_two_pass.py").read_text()
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


def test_a_batch_of_a_given_count_takes_the_triton_files_in_turn(tmp_path):
    scale = _load("grade_at_scale")
    correct = ROOT / "tests" / "implementations" / "correct"
    triton = scale.sources(correct, triton_only=True)
    assert triton and "torch_native.py" not in {p.name for p in triton} and "two_pass.py" in {p.name for p in triton}
    batch = scale.build_batch(tmp_path / "batch", 1, correct, count=len(triton) + 2, triton_only=True)
    assert len(batch) == len(set(batch)) == len(triton) + 2
    assert [p.name for p in batch[-2:]] == [f"{triton[0].stem}_copy1.py", f"{triton[1].stem}_copy1.py"]
    assert batch[0].read_text() != batch[len(triton)].read_text()  # two copies of one file differ


def test_profile_check_reports_the_pace_the_compiles_and_the_hot_functions(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "profile_check.py"), "--device", "cpu", "--budget", "5", "--top", "3",
         "--impl", f"{DOUBLES}:lse_float64"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "\nPASS " in run.stdout and "5 examples" in run.stdout
    assert "triton kernels compiled: 0;" in run.stdout  # nothing compiles in the interpreter
    assert "## top 3 by cumulative" in run.stdout and "## top 3 by tottime" in run.stdout


def test_merge_state_device_judges_every_case_of_its_grid(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "merge_state_device.py"), "--device", "cpu"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in run.stdout.splitlines() if line.startswith(("ok", "FAIL"))]
    assert len(lines) == 48 and all(line.startswith("ok") for line in lines)
    shares = [float(line.split("worst ")[1].split()[0]) for line in lines]
    assert 0 < max(shares) <= 1  # the allowance is used, not dwarfing the error
    assert run.stdout.rstrip().endswith("PASSED: 0 of 48 cases outside the tolerance")


COMPILE_TWICE = """
import cProfile, io, pstats, sys
sys.path.insert(0, sys.argv[1])
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from bench.profile_check import _compile_stats

@triton.jit
def add_one(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) + 1)

profiler = cProfile.Profile()
profiler.enable()
source = ASTSource(fn=add_one, signature={"x_ptr": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
for _ in range(2):  # a miss, then a hit of the disk cache
    triton.compile(source, target=GPUTarget("cuda", 90, 32))
profiler.disable()
print(_compile_stats(pstats.Stats(profiler, stream=io.StringIO()))[0])
"""


def test_profile_check_counts_a_cache_miss_as_a_compile_and_a_hit_not(tmp_path):
    # Triton compiles for a GPU target without a GPU (its bundled ptxas does the last stage).
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache"), "TRITON_INTERPRET": "0"}
    script = tmp_path / "compile_twice.py"  # @triton.jit needs its source in a file
    script.write_text(COMPILE_TWICE)
    run = subprocess.run([sys.executable, str(script), str(ROOT)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env=env)
    if run.returncode != 0 and "ptxas" in run.stderr:
        pytest.skip("this Triton install has no ptxas to compile for sm_90 with")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-1] == "1"


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "bench").glob("*.sh")))
def test_each_gpu_script_parses_and_names_its_usage_without_an_output_folder(script, tmp_path):
    # They run on a rented GPU machine in one command each: a syntax error there costs the whole run.
    path = ROOT / "bench" / script
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True).returncode == 0
    bare = subprocess.run(["bash", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert bare.returncode != 0 and "usage" in bare.stderr


def test_worker_start_times_k_workers_started_at_once(capsys):
    worker_start = _load("worker_start")
    assert worker_start.main(["--device", "cpu", "--target", f"{DOUBLES}:lse_float64", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].split()[:3] == ["worker", "ready", "K=2"], lines
    assert worker_start._line("x", 3, [1.0, 2.0, 4.0]).endswith("median  2.00 s, min  1.00 s, max  4.00 s")
