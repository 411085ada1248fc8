"""Grading on a Ray cluster (fuzz.grading.ray_executor), on a local Ray cluster of this machine."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.grading import GradeOptions, discover, grade
from fuzz.grading.ray_executor import grade_remote

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'lse-fuzz[ray]'")
# One xdist worker runs the module (`--dist loadgroup`): one local cluster per run.
pytestmark = pytest.mark.xdist_group("ray_cluster")

IMPLEMENTATIONS = Path(__file__).resolve().parents[2] / "implementations"
BATCH = [IMPLEMENTATIONS / "correct" / "torch_float32.py", IMPLEMENTATIONS / "candidates" / "buggy_no_max.py",
         IMPLEMENTATIONS / "candidates" / "raises.py", IMPLEMENTATIONS / "candidates" / "syntax_error.py"]
OPTIONS = GradeOptions(budget=10, device="cpu").validated()


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024 * 1024, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture
def batch(tmp_path):
    folder = tmp_path / "candidates"
    folder.mkdir()
    for path in BATCH:
        shutil.copy(path, folder / path.name)
    return discover([str(folder)])


def _verdicts(records):
    return {r.candidate.rpartition("/")[2]: (r.verdict, r.check) for r in records}


def test_a_batch_gets_the_verdicts_of_the_local_executor(cluster, batch, tmp_path):
    on_ray = grade(batch, OPTIONS, out=tmp_path / "ray", executor="ray")
    here = grade(batch, OPTIONS, out=tmp_path / "local", jobs=2)
    assert _verdicts(on_ray.records) == _verdicts(here.records) == {
        "torch_float32.py": ("pass", None), "buggy_no_max.py": ("fail", "agreement"),
        "raises.py": ("error", None), "syntax_error.py": ("load_error", None)}
    assert all(r.extra.get("node") for r in on_ray.records)  # the node each ran on is recorded
    by_name = {r.candidate.rpartition("/")[2]: r for r in on_ray.records}
    assert by_name["buggy_no_max.py"].target == next(c.target for c in batch if c.name.endswith("buggy_no_max.py"))


def test_reproducers_come_back_and_name_this_machine_s_paths(cluster, batch, tmp_path):
    out = tmp_path / "report"
    run = grade(batch, OPTIONS, out=out, executor="ray", jobs=1)
    failed = next(r for r in run.records if r.verdict == "fail")
    reproducer = Path(failed.reproducer)
    assert reproducer.is_file() and out.resolve() in reproducer.parents
    candidate = next(c for c in batch if c.name == failed.candidate)
    assert f"--impl {candidate.target}" in failed.replay and str(reproducer) in failed.replay
    # No path of the task's temporary folder is left.
    assert "lse-fuzz-ray-" not in json.dumps([r.to_json() for r in run.records])


def test_resume_keeps_what_the_cluster_graded(cluster, batch, tmp_path):
    grade(batch, OPTIONS, out=tmp_path / "report", executor="ray")
    again = grade(batch, OPTIONS, out=tmp_path / "report", executor="ray", resume=True)
    assert again.graded == 0 and again.resumed == len(batch)


def test_the_candidate_s_file_travels_with_its_task(tmp_path):
    """A node that shares no file system with the grader: the path exists only in the payload."""
    source = base64.b64encode((IMPLEMENTATIONS / "candidates" / "buggy_no_max.py").read_bytes()).decode()
    candidate = {"name": "elsewhere/buggy.py", "path": "/nonexistent/elsewhere/buggy.py",
                 "target": "/nonexistent/elsewhere/buggy.py:lse"}
    from fuzz._version import __version__

    reply = grade_remote({"candidate": candidate, "source": source, "options": OPTIONS.to_wire(),
                          "hard_limit": 300.0, "tool": __version__})
    assert reply["record"]["verdict"] == "fail" and reply["files"]
    assert reply["record"]["target"] == candidate["target"]  # named as on the grading machine


def test_a_node_with_another_version_is_an_internal_error_graded_again(cluster, batch, tmp_path, monkeypatch):
    import fuzz.grading.ray_executor as executor

    monkeypatch.setattr(executor, "__version__", "0.0.0-elsewhere")  # what this machine says it runs
    run = grade(batch[:1], OPTIONS, out=tmp_path / "report", executor="ray")
    (record,) = run.records
    assert record.verdict == "internal_error" and "install the same version on every node" in record.reason


def test_the_command_line_on_a_cluster(cluster, batch, tmp_path):
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "fuzz", "grade", str(Path(batch[0].path).parent), "--executor",
                           "ray", "--ray-address", cluster, "--device", "cpu", "--budget", "10", "--out-dir", str(out),
                           "-q"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr  # one candidate fails
    assert "with a Ray cluster (every task at once)" in proc.stderr
    records = [json.loads(line) for line in (out / "grade.jsonl").read_text().splitlines()]
    assert sorted(r["verdict"] for r in records) == ["error", "fail", "load_error", "pass"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--ray-address", "auto"], "--ray-address='auto' is for --executor ray"),
    (["--executor", "ray", "--jobs", "0"], "--jobs=0"),
], ids=["address_without_ray", "bad_jobs"])
def test_bad_executor_options_get_one_message(tmp_path, argv, message):
    proc = subprocess.run([sys.executable, "-m", "fuzz", "grade", str(BATCH[0]), "--out-dir", str(tmp_path / "r"),
                           *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr

