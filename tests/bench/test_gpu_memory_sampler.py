"""bench/gpu_memory_sampler.py: the GPU's peak and each kind of process's largest, from nvidia-smi
(stood in for by a script printing what nvidia-smi prints)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from bench.gpu_memory_sampler import GpuMemorySampler, kind_of


def _fake_smi(tmp_path, probe_pid: int, worker_pid: int) -> str:
    """An nvidia-smi whose GPU uses 30000 MiB, then 41383, then 20000 (one more per call)."""
    script = tmp_path / "nvidia-smi"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import sys, pathlib
        count = pathlib.Path({str(tmp_path / "calls")!r})
        n = int(count.read_text()) if count.exists() else 0
        if sys.argv[1].startswith("--query-gpu"):
            count.write_text(str(n + 1))
            print(f"{{(30000, 41383, 20000)[min(n, 2)]}}, 81559")
        else:
            print(f"{probe_pid}, {{1056 if n >= 2 else 900}}")
            print("{worker_pid}, 612")
            print("[N/A], [N/A]")
        """))
    script.chmod(0o755)
    return str(script)


def test_the_peak_and_each_kinds_largest_process(tmp_path):
    probe = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-m", "fuzz.memory.probe"])
    try:
        sampler = GpuMemorySampler(smi=_fake_smi(tmp_path, probe.pid, os.getpid()))
        for _ in range(3):
            sampler.sample()
    finally:
        probe.kill()
        probe.wait()
    assert (sampler.peak_used, sampler.total, sampler.samples) == (41383, 81559, 3)
    assert sampler.largest == {"memory probe": 1056, "worker": 612}
    assert sampler.summary() == ("GPU memory: peak 41383 of 81559 MiB over 3 samples; largest process of each "
                                 "kind: memory probe 1056 MiB, worker 612 MiB")


def test_the_thread_samples_until_stopped(tmp_path):
    with GpuMemorySampler(interval=0.05, smi=_fake_smi(tmp_path, 1, 2)) as sampler:
        while sampler.samples < 2:
            pass
    assert sampler.peak_used == 41383


def test_without_nvidia_smi_it_says_so(tmp_path):
    with GpuMemorySampler(smi=str(tmp_path / "missing")) as sampler:
        pass
    assert sampler.summary() == f"GPU memory: not sampled ({tmp_path / 'missing'} not found)"


@pytest.mark.parametrize(("command_line", "kind"), [
    ("/usr/bin/python3 -m fuzz.memory.probe tuned.hooks:lse --device cuda", "memory probe"),
    ("python3 -m lse_fuzz check tuned.hooks:lse --device cuda", "command"),
    ("/usr/local/bin/python3 /usr/local/bin/lse-fuzz mutants -j 14", "command"),
    ("python3 -c import os, sys; from fuzz.isolation.fork_server.server import zygote_main", "worker"),
    ("", "worker"),
])
def test_a_process_is_named_by_its_command_line(command_line, kind):
    assert kind_of(command_line) == kind
