"""``--device cpu`` on a CUDA machine: Triton's interpreter in the fuzzer's own process (its
reference kernel) and in every worker, for ``check``, ``grade``, ``mutants`` and ``mutate``.

The CUDA machine is simulated (``implementations/simulated_cuda/sitecustomize.py``: every process
sees ``torch.cuda.is_available()`` True), so the project's kernels and a candidate's would be
decorated for a GPU that cannot run them unless ``--device cpu`` turns the interpreter on before
Triton is imported. Before that was so, ``grade --device cpu`` on an H200 graded every candidate
that defines a Triton kernel ``internal_error`` ("x.device='cpu', but Triton kernels are compiled
for CUDA here"); the simulation reproduces that report on the tree before the fix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

IMPLEMENTATIONS = Path(__file__).resolve().parents[2] / "implementations"
SIMULATED = IMPLEMENTATIONS / "simulated_cuda"
ROOT = IMPLEMENTATIONS.parents[1]


def lse_fuzz(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(SIMULATED), str(ROOT)])
    return subprocess.run([sys.executable, "-m", "fuzz", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_simulation_makes_triton_compile_for_a_gpu(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(SIMULATED), str(ROOT)])
    probe = "import reference, torch; print(torch.cuda.is_available(), reference._device.interpreting())"
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["True", "False"], out.stderr


def test_check_runs_a_triton_kernel_in_the_interpreter(tmp_path):
    run = lse_fuzz("check", str(IMPLEMENTATIONS / "correct" / "two_pass.py"), "--device", "cpu", "--budget", "15",
                   cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout and " on cpu " in run.stderr + run.stdout


def test_grade_gives_triton_candidates_their_verdicts_not_internal_error(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    for name in ("triton_two_pass.py", "torch_float64.py", "buggy_no_max.py"):
        shutil.copy(IMPLEMENTATIONS / "candidates" / name, batch / name)
    run = lse_fuzz("grade", str(batch), "--device", "cpu", "--budget", "15", "--out-dir", str(tmp_path / "report"),
                   cwd=tmp_path)
    records = {Path(r["candidate"]).name: r
               for r in map(json.loads, (tmp_path / "report" / "grade.jsonl").read_text().splitlines())}
    verdicts = {name: record["verdict"] for name, record in records.items()}
    assert verdicts == {"triton_two_pass.py": "pass", "torch_float64.py": "pass", "buggy_no_max.py": "fail"}, \
        run.stdout + run.stderr


@pytest.mark.slow
def test_mutants_and_mutate_run_in_the_interpreter(tmp_path):
    run = lse_fuzz("mutants", "no_max_added", "masked_lanes_zero", "--device", "cpu", "--budget", "30",
                   "--out-dir", str(tmp_path / "mutants"), "-q", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 Killed" in run.stdout
    run = lse_fuzz("mutate", str(IMPLEMENTATIONS / "mutate" / "tiny_lse.py"), "--contract", "finite",
                   "--dtypes", "float32", "--device", "cpu", "--budget", "10", "--thorough-budget", "0",
                   "--operators", "max_not_added_back", "--no-cache", "--out-dir", str(tmp_path / "mutate"),
                   "-q", cwd=tmp_path)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert "mutation score" in run.stdout, run.stdout + run.stderr


def test_a_cpu_worker_sees_no_gpu_as_on_a_cpu_only_host(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import torch\n\ndef lse(x):\n    assert not torch.cuda.is_available(), 'a GPU is visible'\n"
                     "    return torch.logsumexp(x.double(), dim=-1).to(x.dtype if x.is_floating_point() else torch.float32)\n")
    run = lse_fuzz("check", f"{probe}:lse", "--device", "cpu", "--budget", "5", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_memory_limit_leaves_a_worker_room_for_huge_offset_inputs_beside_cuda_libraries(tmp_path):
    # On an H200 host, `grade --device cpu --memory-limit 1` crashed correct candidates "out of memory"
    # on a 16 GiB huge-offset input: the address space CUDA's libraries map counted against the limit.
    # Then, that fixed, the Triton neighbour alone, "can't allocate 8589934794 bytes": its import-time
    # torch.cuda.is_available() started CUDA in the worker, 12 GiB more; a --device cpu worker now
    # sees no GPU, as on a CPU-only host. The simulation maps both the same way; the hogs still meet
    # their limit.
    batch = tmp_path / "batch"
    batch.mkdir()
    shutil.copy(IMPLEMENTATIONS / "correct" / "torch_float32.py", batch / "zz_torch_neighbour.py")
    shutil.copy(IMPLEMENTATIONS / "correct" / "two_pass.py", batch / "zz_triton_neighbour.py")
    shutil.copy(IMPLEMENTATIONS / "hostile" / "lifts_memory_limit.py", batch / "lifts_memory_limit.py")
    shutil.copy(IMPLEMENTATIONS / "candidates" / "memory_hog.py", batch / "memory_hog.py")
    run = lse_fuzz("grade", str(batch), "--device", "cpu", "--budget", "8", "--max-elements", "1024", "-j", "2",
                   "--no-bench", "--memory-limit", "1", "--out-dir", str(tmp_path / "report"), cwd=tmp_path)
    records = {Path(r["candidate"]).name: r
               for r in map(json.loads, (tmp_path / "report" / "grade.jsonl").read_text().splitlines())}
    verdicts = {name: record["verdict"] for name, record in records.items()}
    assert verdicts == {"zz_torch_neighbour.py": "pass", "zz_triton_neighbour.py": "pass",
                        "lifts_memory_limit.py": "crash", "memory_hog.py": "crash"}, run.stdout + run.stderr
    assert all("out of memory" in records[name]["reason"] for name in ("lifts_memory_limit.py", "memory_hog.py"))
