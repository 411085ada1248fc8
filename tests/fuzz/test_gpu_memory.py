"""Huge-offset inputs on a GPU take one of a fixed number of slots shared by every process."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import torch

from fuzz import gpu_memory
from fuzz.gpu_memory import HugeInputSlots, with_memory_retry


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


def _flaky_allocation(failures):
    attempts = []

    def make():
        attempts.append(1)
        if len(attempts) <= failures:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB.")
        return "tensor"

    return make, attempts


def test_an_allocation_waits_for_memory_another_process_gives_back(monkeypatch):
    monkeypatch.setattr(gpu_memory.time, "sleep", lambda seconds: None)
    make, attempts = _flaky_allocation(3)
    assert with_memory_retry(make, torch.device("cuda", 0)) == "tensor"
    assert len(attempts) == 4


def test_past_the_wait_the_out_of_memory_error_is_raised(monkeypatch):
    monkeypatch.setattr(gpu_memory.time, "sleep", lambda seconds: None)
    make, attempts = _flaky_allocation(1000)
    with pytest.raises(torch.OutOfMemoryError):
        with_memory_retry(make, torch.device("cuda", 0), wait=0.0)
    assert len(attempts) == 1


def test_on_a_cpu_nothing_is_tried_twice():
    make, attempts = _flaky_allocation(1)
    with pytest.raises(torch.OutOfMemoryError):
        with_memory_retry(make, torch.device("cpu"))
    assert len(attempts) == 1
