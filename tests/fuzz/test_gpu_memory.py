"""Huge-offset inputs on a GPU take one of a fixed number of slots shared by every process."""

from __future__ import annotations

import multiprocessing
import time

import torch

from fuzz import gpu_memory
from fuzz.gpu_memory import HugeInputSlots


def _hold(directory, count, seconds, queue):
    slots = HugeInputSlots(torch.device("cuda", 0), count=count, directory=directory)
    with slots.hold() as k:
        queue.put(("in", k, time.monotonic()))
        time.sleep(seconds)
        queue.put(("out", k, time.monotonic()))


def test_no_more_processes_hold_a_slot_than_there_are_slots(tmp_path):
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_hold, args=(tmp_path, 2, 0.5, queue)) for _ in range(3)]
    for worker in workers:
        worker.start()
    events = sorted((queue.get(timeout=60) for _ in range(6)), key=lambda e: e[2])
    for worker in workers:
        worker.join(timeout=60)
    holding, most = 0, 0
    for kind, _, _ in events:
        holding += 1 if kind == "in" else -1
        most = max(most, holding)
    assert most == 2  # two at once, never three
    assert sorted(k for kind, k, _ in events if kind == "in") in ([0, 0, 1], [0, 1, 1])


def test_a_slot_holds_every_copy_of_the_largest_huge_input():
    # The fuzzer's copy, a metamorphic check's transformed copy and the worker's.
    assert gpu_memory._PER_SLOT > 3 * gpu_memory.HUGE_INPUT_BYTES
    assert 139 * 2**30 // gpu_memory._PER_SLOT == 2  # an H200: two huge examples at a time
