"""bench/cpu_by_process.py: whose CPU time a command's processes took, and the machine's busy CPUs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("cpu_by_process", ROOT / "bench" / "cpu_by_process.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_processes_are_told_apart_by_name_command_line_and_parent():
    bench = _load()
    zygote = "/usr/bin/python -c import os, sys; from fuzz.isolation.fork_server.server import zygote_main"
    assert bench.kind("python", "python bench/mutants_timeline.py", "", True) == "the command"
    assert bench.kind("python3", zygote, "the command", False) == bench.FORK_SERVER
    assert bench.kind("python3", zygote, bench.FORK_SERVER, False) == bench.DRIVERS
    assert bench.kind("python3", "", bench.FORK_SERVER, False) == bench.WORKERS  # its command line overwritten
    assert bench.kind("ptxas", "/opt/cuda/bin/ptxas -arch=sm_90", bench.WORKERS, False) == "ptxas"
    assert bench.kind("compute-sanitizer", "/usr/local/cuda/bin/compute-sanitizer --tool memcheck python",
                      bench.DRIVERS, False) == "compute-sanitizer"
    assert bench.kind("python3", "python -m fuzz.memory.probe reference:lse", "compute-sanitizer",
                      False).startswith("memory probes")
    assert bench.kind("gcc", "gcc x.c", bench.WORKERS, False) == f"{bench.WORKERS}: their children (gcc)"


def test_a_childs_cpu_time_is_counted_under_its_kind_and_in_the_total():
    bench = _load()
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"
    command = [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}])"]
    found = bench.sample(command, every=0.05)
    assert found["exit"] == 0 and found["total_cpu"] >= 0.6
    child = [cpu for what, cpu in found["by_kind"].items() if what.startswith("other")]
    assert child and max(child) >= 0.4, found["by_kind"]
    assert found["busy_cpus_per_second"] and all(v >= 0 for v in found["busy_cpus_per_second"].values())
