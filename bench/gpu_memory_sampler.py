"""GPU memory while checks run side by side: the GPU's peak and each kind of process's largest.

    with GpuMemorySampler() as sampler:   # nvidia-smi once a second, in a thread
        ... run the checks ...
    print(sampler.summary())   # "GPU memory: peak 41383 of 81559 MiB; largest: memory probe 1056 MiB, ..."

Why: eight checks of autotuned kernels once filled an 80 GiB H100 (the memory phase's probe
processes held 8.7-9.9 GiB each) and correct kernels were graded a crash; the figures here make a
regression of that kind visible in every GPU run of ``bench/verdict_time.py --memory``. A process
is named by its command line (read from /proc while it lives): ``memory probe``
(``fuzz.memory.probe``, under compute-sanitizer), ``command`` (``lse-fuzz check`` and the other
commands), ``worker`` (the rest: fork servers, grading drivers and the isolated workers, forked
without a command line of their own).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

KINDS = (("fuzz.memory.probe", "memory probe"), ("-m lse_fuzz ", "command"), ("lse-fuzz ", "command"))
"""(text in the command line, kind), first match wins; no match: ``worker``."""


def kind_of(command_line: str) -> str:
    return next((kind for text, kind in KINDS if text in command_line), "worker")


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@dataclass
class GpuMemorySampler:
    """Samples ``nvidia-smi`` every ``interval`` seconds between ``start()`` and ``stop()``."""

    interval: float = 1.0
    smi: str = "nvidia-smi"
    peak_used: int = 0  # MiB, the whole GPU
    total: int = 0
    samples: int = 0
    largest: dict[str, int] = field(default_factory=dict)  # kind -> MiB of its largest process
    kinds: dict[int, str] = field(default_factory=dict)  # pid -> kind, named once
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return shutil.which(self.smi) is not None

    def start(self) -> GpuMemorySampler:
        if self.available:
            self._thread = threading.Thread(target=self._run, name="gpu-memory-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> GpuMemorySampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def _query(self, what: str) -> list[list[str]]:
        try:
            done = subprocess.run([self.smi, f"--query-{what}", "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return []
        return [[cell.strip() for cell in line.split(",")] for line in done.stdout.splitlines() if line.strip()]

    def sample(self) -> None:
        """One sample: the GPU's used and total memory, and each compute process's."""
        gpu = self._query("gpu=memory.used,memory.total")
        if gpu and len(gpu[0]) == 2 and all(cell.isdigit() for cell in gpu[0]):
            used, self.total = int(gpu[0][0]), int(gpu[0][1])
            self.peak_used = max(self.peak_used, used)
            self.samples += 1
        for row in self._query("compute-apps=pid,used_memory"):
            if len(row) != 2 or not all(cell.isdigit() for cell in row):
                continue
            pid, used = int(row[0]), int(row[1])
            if pid not in self.kinds:
                self.kinds[pid] = kind_of(_command_line(pid))
            kind = self.kinds[pid]
            self.largest[kind] = max(self.largest.get(kind, 0), used)

    def summary(self) -> str:
        if not self.samples:
            return "GPU memory: not sampled" + ("" if self.available else f" ({self.smi} not found)")
        largest = ", ".join(f"{kind} {mib} MiB" for kind, mib in sorted(self.largest.items(), key=lambda kv: -kv[1]))
        return (f"GPU memory: peak {self.peak_used} of {self.total} MiB over {self.samples} samples"
                + (f"; largest process of each kind: {largest}" if largest else ""))
