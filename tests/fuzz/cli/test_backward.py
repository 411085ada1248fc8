"""``--backward`` from the command line: each broken backward of ``implementations/backward`` fails
the gradient check that names its bug, a correct one passes, the replay line replays the gradient,
and an implementation autograd cannot differentiate gets one line and exit 2."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

BACKWARD = Path(__file__).resolve().parents[2] / "implementations" / "backward"
ROOT = BACKWARD.parents[2]


def lse_fuzz(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "fuzz", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_grade_with_backward_names_each_bug(tmp_path):
    batch = tmp_path / "batch"
    shutil.copytree(BACKWARD, batch, ignore=shutil.ignore_patterns("__pycache__", "no_autograd.py"))
    run = lse_fuzz("grade", str(batch), "--device", "cpu", "--budget", "20", "--backward", "-j", "2",
                   "--out-dir", str(tmp_path / "report"), cwd=tmp_path)
    records = {Path(r["candidate"]).name: r
               for r in map(json.loads, (tmp_path / "report" / "grade.jsonl").read_text().splitlines())}
    got = {name: (record["verdict"], record.get("check")) for name, record in records.items()}
    assert got == {
        "torch_logsumexp.py": ("pass", None),
        "upstream_not_applied.py": ("fail", "grad_agreement"),
        "no_max_shift.py": ("fail", "grad_agreement"),
        "overwrites_input.py": ("fail", "grad_input_unchanged"),
    }, run.stdout + run.stderr


def test_check_replays_a_gradient_failure_and_refuses_what_it_cannot_differentiate(tmp_path):
    run = lse_fuzz("check", str(BACKWARD / "upstream_not_applied.py"), "--device", "cpu", "--budget", "20",
                   "--backward", "--reproducers", str(tmp_path / "repro"), cwd=tmp_path)
    assert run.returncode == 1 and "check 'grad_agreement' failed: dx[0, 0] differs" in run.stdout, run.stderr
    replay = next(line.split("replay:", 1)[1].strip() for line in run.stdout.splitlines() if "replay:" in line)
    command, *argv = shlex.split(replay)
    assert command == "lse-fuzz"  # the console script; `python -m lse_fuzz` is the same entry point, PATH aside
    again = subprocess.run([sys.executable, "-m", "lse_fuzz", *argv], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "check 'grad_agreement' failed" in again.stdout, again.stdout + again.stderr
    run = lse_fuzz("check", str(BACKWARD / "no_autograd.py"), "--device", "cpu", "--budget", "5", "--backward",
                   cwd=tmp_path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "does not require grad" in run.stderr and "Traceback" not in run.stderr
    run = lse_fuzz("check", str(BACKWARD / "torch_logsumexp.py"), "--device", "cpu", "--backward", "--ndim", "3",
                   cwd=tmp_path)
    assert run.returncode == 2 and "2-D lse(x)" in run.stderr and "Traceback" not in run.stderr, run.stderr
