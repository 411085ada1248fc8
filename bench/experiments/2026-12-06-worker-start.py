"""How long a GPU worker takes to start, alone and K at once (tree 1698d35 and after).

    python bench/experiments/2026-12-06-worker-start.py [K ...]     (default: 1 4 14)
    python bench/experiments/2026-12-06-worker-start.py --isolated [K ...]

A cold `lse-fuzz mutants --device cuda -j 14` on an H100 host reported 4-5 s of ``worker_start`` for
each of its first 14 jobs and 1.4-2 s for later ones: a third of the analysis's job-seconds. A worker
is forked from the fork server (which imported :data:`fuzz.isolation.fork_server.server.PRELOAD`),
loads its target, then creates its CUDA context. This forks K children at once from a process that
imported the same modules; each loads one bundled mutant and creates its context, in both orders,
and reports each step's seconds. Prints one line per (K, order): the wall clock of all K, and the
median and largest seconds of each step. ``--isolated`` starts K workers as a run starts them
(:class:`fuzz.isolation.IsolatedImpl` of a mutant on ``cuda``, or ``$DEVICE``, from K threads,
through the fork server) and prints the median and largest of their ``load_seconds`` (a report's ``worker_start``).
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fuzz.isolation.fork_server.server import PRELOAD  # noqa: E402

for module in PRELOAD:
    __import__(module)

import torch  # noqa: E402

from mutants import NAMES  # noqa: E402


def _device() -> None:
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()


def _target(name: str) -> None:
    getattr(importlib.import_module("mutants.patched"), name)


def _child(pipe: int, name: str, order: tuple[str, ...]) -> None:
    seconds = {}
    for step in order:
        started = time.perf_counter()
        _device() if step == "device" else _target(name)
        seconds[step] = time.perf_counter() - started
    os.write(pipe, (json.dumps(seconds) + "\n").encode())
    os._exit(0)


def trial(k: int, order: tuple[str, ...]) -> str:
    read, write = os.pipe()
    started = time.perf_counter()
    pids = []
    for index in range(k):
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(write, NAMES[index % len(NAMES)], order)
        pids.append(pid)
    os.close(write)
    for pid in pids:
        os.waitpid(pid, 0)
    wall = time.perf_counter() - started
    text = b""
    while chunk := os.read(read, 65536):
        text += chunk
    os.close(read)
    rows = [json.loads(line) for line in text.decode().splitlines()]
    parts = [f"K={k:2d} {'+'.join(order):13s} wall {wall:5.2f} s ({len(rows)} reported)"]
    for step in order:
        values = [row[step] for row in rows]
        parts.append(f"{step} median {statistics.median(values):5.2f} max {max(values):5.2f}")
    return "; ".join(parts)


def isolated(k: int) -> str:
    from concurrent.futures import ThreadPoolExecutor

    from fuzz.isolation import IsolatedImpl, expected_worker_environment, prestart

    prestart(expected_worker_environment())
    impls = [IsolatedImpl(f"mutants.patched:{NAMES[index % len(NAMES)]}", device=os.environ.get("DEVICE", "cuda")) for index in range(k)]
    started = time.perf_counter()
    with ThreadPoolExecutor(k) as pool:
        list(pool.map(IsolatedImpl.start, impls))
    wall = time.perf_counter() - started
    seconds = [impl.load_seconds for impl in impls]
    for impl in impls:
        impl.close()
    return (f"K={k:2d} isolated workers: wall {wall:5.2f} s; load_seconds median {statistics.median(seconds):5.2f} "
            f"max {max(seconds):5.2f}")


def main() -> None:
    if sys.argv[1:2] == ["--isolated"]:
        for k in [int(a) for a in sys.argv[2:]] or [1, 14]:
            print(isolated(k), flush=True)
        return
    for k in [int(a) for a in sys.argv[1:]] or [1, 4, 14]:
        for order in (("target", "device"), ("device", "target")):
            print(trial(k, order), flush=True)


if __name__ == "__main__":
    main()
