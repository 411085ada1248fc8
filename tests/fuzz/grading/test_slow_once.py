"""A correct candidate slow on one call is graded alike on every host, under load too.

``candidates/slow_fifth_call.py`` answers right and sleeps 10 s on its fifth call. A user's
``lse-fuzz grade DIR --device cpu -j 8`` on a 16-CPU host with a GPU graded it internal_error,
"the grader failed on it: +------------------------------------", where a CPU-only host passed
it. A call slower than ``fuzz.timing.SLOW_FLOOR`` is timed against ``reference.lse`` on the same
input, in the grading driver; on a GPU host Triton compiled that kernel for CUDA there, and it
refuses a CPU tensor. The slow call raised in the harness, Hypothesis replayed the example (fast
then) and raised FlakyFailure, an exception group, and its traceback's last line, a border,
became the reason. A CPU run's drivers now interpret, as its workers do
(``fuzz.grading.options.driver_environment``).

A GPU host is simulated with TRITON_INTERPRET=0 in the grader's environment: ``reference._device``
keeps a user's setting, so the grader's processes would compile. The copies graded here sleep
less or more than the planted 10 s (``SLEEP_SECONDS`` is the anchor of the edit): just past the
slow floor to take the slow path, or far past any second deadline to be a hang.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from fuzz.cli import main
from fuzz.grading import GradeOptions
from fuzz.grading.evaluate import evaluate
from fuzz.grading.options import driver_environment
from fuzz.timing import SLOW_FLOOR
from reference.errors import InvalidArgument

CANDIDATES = Path(__file__).resolve().parents[2] / "implementations" / "candidates"
PLANTED = "SLEEP_SECONDS = 10.0\n"
UNDER_LOAD = ["--device", "cpu", "-j", "8", "--budget", "20", "--max-elements", "4096", "--seed", "0",
              "--memory-limit", "4", "-q"]


def slow_copy(path: Path, seconds: float) -> Path:
    """The planted candidate with its slow call ``seconds`` long (an edit anchored on its constant)."""
    source = (CANDIDATES / "slow_fifth_call.py").read_text()
    assert source.count(PLANTED) == 1, "slow_fifth_call.py no longer sets SLEEP_SECONDS = 10.0"
    path.write_text(source.replace(PLANTED, f"SLEEP_SECONDS = {seconds!r}\n"))
    return path


def grade_under_load(tmp_path: Path, seconds: float, *options: str) -> tuple[int, dict[str, dict]]:
    """The slow copy and three correct neighbours graded with ``-j 8``: four drivers and their
    workers on the machine's cores at once."""
    batch = tmp_path / "batch"
    batch.mkdir()
    slow_copy(batch / "slow.py", seconds)
    for index in range(3):
        shutil.copy(CANDIDATES / "torch_float64.py", batch / f"neighbour_{index}.py")
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["grade", str(batch), *UNDER_LOAD, "--out-dir", str(out), *options])
    lines = (out / "grade.jsonl").read_text().splitlines()
    return code, {Path(record["candidate"]).stem: record for record in map(json.loads, lines)}


def test_a_cpu_runs_drivers_interpret_whatever_the_host():
    gpu_host = {"TRITON_INTERPRET": "0", "PATH": "/bin"}
    assert driver_environment(GradeOptions(device="cpu"), gpu_host) == {"TRITON_INTERPRET": "1", "PATH": "/bin",
                                                                        "CUDA_VISIBLE_DEVICES": ""}
    assert gpu_host["TRITON_INTERPRET"] == "0"  # a copy: the grader's own environment stays
    assert driver_environment(GradeOptions(device="cuda:1"), gpu_host) is gpu_host
    assert driver_environment(GradeOptions(device="cuda")) is None  # the pool's default: this process's


@pytest.fixture
def gpu_host(monkeypatch):
    """The grader's own processes would compile Triton for CUDA, as on a host with a GPU."""
    monkeypatch.setenv("TRITON_INTERPRET", "0")


def test_slow_once_passes_with_the_default_deadline(tmp_path, gpu_host):
    seconds = SLOW_FLOOR + 1.0  # past the floor: the driver times the call against reference.lse
    code, records = grade_under_load(tmp_path, seconds)
    slow = records["slow"]
    assert slow["verdict"] == "pass", slow["reason"]
    assert code == 0 and all(record["verdict"] == "pass" for record in records.values())
    # A finding beside the verdict, not a failure, and compared with reference.lse on the same
    # input: the driver can run it on a CPU input (it interprets, as the worker does).
    (finding,) = slow["slow"]
    assert finding["seconds"] >= seconds and finding["reference_seconds"] is not None, finding
    assert finding["reference_seconds"] > 0 and finding["ratio"] > 1


def test_slow_once_is_a_timeout_under_a_short_call_timeout(tmp_path, gpu_host):
    # Far past both deadlines: the first (1 s) and the second, 100 x reference.lse on the input
    # (a 1 x 1 input here: 3-7 s of Triton's interpreter, more under load).
    code, records = grade_under_load(tmp_path, 600.0, "--call-timeout", "1")
    slow = records["slow"]
    assert slow["verdict"] == "timeout", slow["reason"]
    assert slow["reason"].startswith("timed out: no answer within ") and "while call 5 on a" in slow["reason"]
    assert "past the first deadline of 1 s" in slow["reason"] and slow["reason"].endswith("a hang")
    assert slow["seconds"] < 120  # stopped at its deadline, not waited out
    assert code == 1 and all(records[f"neighbour_{index}"]["verdict"] == "pass" for index in range(3))


def test_where_the_reference_cannot_time_a_slow_call_the_reason_says_so_in_one_line(tmp_path, monkeypatch):
    # In the grader's own process (lse-fuzz check runs its first part there) on a GPU host the
    # reference still cannot run on a CPU input: no verdict on the candidate, and one line that
    # names why, not an exception group's border.
    def compiled_for_cuda(x):
        raise InvalidArgument("x.device='cpu', but Triton kernels are compiled for CUDA here")

    monkeypatch.setattr("fuzz.checks.context.SLOW_FLOOR", 0.2)
    monkeypatch.setattr("fuzz.checks.context.reference_seconds", compiled_for_cuda)
    target = f"{slow_copy(tmp_path / 'slow.py', 0.4)}:lse"
    options = GradeOptions(budget=20, max_elements=1024, parts=1, huge_offsets=False).validated()
    record = evaluate(target, options, reproducer_dir=tmp_path)
    assert record.verdict == "internal_error"
    assert record.reason.startswith("the harness failed: the fuzzer's own checks failed on ")
    assert record.reason.endswith(", not the implementation: InvalidArgument: x.device='cpu', but Triton "
                                     "kernels are compiled for CUDA here")
    assert "\n" not in record.reason and "compiled_for_cuda" in record.details
