"""What a worker's start costs when K start at once: the load a driver waits for, and its CUDA part.

    python bench/worker_start.py [--device cuda] [--target reference:lse] [K ...]

For each K (default 1 4 14), starts K isolated workers of ``--target`` at once (threads of this
process, as K grading drivers would) and prints each one's seconds from its spawn to its ready
message (``IsolatedImpl.load_seconds``: the fork, importing the target, the CUDA context). Then,
on a GPU, K processes forked from one that imported torch create a CUDA context at once (what a
worker's :func:`fuzz.isolation.worker.process._start_device` does): the seconds that part alone
takes under K-fold contention. A cold GPU mutation analysis starts 14 workers at once; each
waited 4-6 s for its worker (2026-12-06, H100).
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _loads(target: str, device: str, count: int) -> list[float]:
    from fuzz.isolation import IsolatedImpl

    impls = [IsolatedImpl(target, device=device) for _ in range(count)]
    seconds = [0.0] * count

    def start(i: int) -> None:
        began = time.monotonic()
        impls[i].start()
        seconds[i] = time.monotonic() - began

    threads = [threading.Thread(target=start, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for impl in impls:
        impl.close()
    return seconds


def _context(queue, device: str) -> None:
    import torch

    began = time.monotonic()
    torch.empty(1, device=device)
    torch.cuda.synchronize(device)
    queue.put(time.monotonic() - began)


def _contexts(device: str, count: int) -> list[float]:
    importlib.import_module("torch")  # before the fork, as in the fork server

    forked = multiprocessing.get_context("fork")
    queue = forked.Queue()
    processes = [forked.Process(target=_context, args=(queue, device)) for _ in range(count)]
    for process in processes:
        process.start()
    seconds = [queue.get(timeout=60) for _ in processes]
    for process in processes:
        process.join()
    return seconds


def _line(what: str, count: int, seconds: list[float]) -> str:
    return (f"{what:>15} K={count:<3} median {statistics.median(seconds):5.2f} s, "
            f"min {min(seconds):5.2f} s, max {max(seconds):5.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("counts", nargs="*", type=int, default=[1, 4, 14])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--target", default="reference:lse")
    args = parser.parse_args(argv)
    from fuzz.isolation import expected_worker_environment, prestart

    if args.device.startswith("cuda"):  # first: this process must not have a CUDA context when it forks
        for count in args.counts:
            print(_line("CUDA context", count, _contexts(args.device, count)), flush=True)
    prestart(expected_worker_environment())
    _loads(args.target, args.device, 1)  # the fork server's own start: not a worker's
    for count in args.counts:
        print(_line("worker ready", count, _loads(args.target, args.device, count)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
