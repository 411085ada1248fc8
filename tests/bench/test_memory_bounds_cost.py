"""bench/memory_bounds_cost.py: the cost of checking every access, as a table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_times_a_kernel_with_the_checks_on_and_off_and_prints_a_row_for_it():
    kernel = ROOT / "tests" / "implementations" / "correct" / "tutorial_whole_row.py"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "memory_bounds_cost.py"), str(kernel), "--calls", "4",
                           "--repeats", "1"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "| kernel | checked s | bounds only s | unchecked s | overhead | bounds only |" in lines
    row = next(line for line in lines if line.startswith("| tutorial_whole_row.py |"))
    checked, alone, unchecked = (float(cell) for cell in row.split("|")[2:5])
    assert checked > 0 and alone > 0 and unchecked > 0
    assert "1 kernels, 4 calls each: median overhead" in done.stdout


def test_the_whole_check_cost_runs_a_kernel_with_and_without_the_memory_checks():
    kernel = ROOT / "tests" / "implementations" / "correct" / "torch_float32.py"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "memory_check_cost.py"), str(kernel), "--seeds", "0",
                           "--budget", "5"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| torch_float32.py | 0 |"))
    with_, without = (float(cell) for cell in row.split("|")[3:5])
    assert with_ > 0 and without > 0 and "exit" not in row  # both runs passed
    assert "1 checks: median overhead" in done.stdout
