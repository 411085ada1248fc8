"""Huge-offset inputs on a GPU take one of a fixed number of slots shared by every process."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import torch

from fuzz import gpu_memory
from fuzz.gpu_memory import HugeInputSlots, with_memory_retry
from fuzz.layouts import HUGE_MAX_ROWS, Layout, LayoutKind


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


ALLOCATOR_OOM = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB.")
RUNTIME_OOM = RuntimeError("CUDA error: out of memory\nSearch for `cudaErrorMemoryAllocation' in https://docs.nvidia.com/")
"""What torch.AcceleratorError says when the CUDA runtime itself has no room (a kernel launch)."""


def _flaky_allocation(failures, error=ALLOCATOR_OOM):
    attempts = []

    def make():
        attempts.append(1)
        if len(attempts) <= failures:
            raise error
        return "tensor"

    return make, attempts


@pytest.mark.parametrize("error", [ALLOCATOR_OOM, RUNTIME_OOM], ids=["allocator", "runtime"])
def test_an_allocation_waits_for_memory_another_process_gives_back(monkeypatch, error):
    monkeypatch.setattr(gpu_memory.time, "sleep", lambda seconds: None)
    make, attempts = _flaky_allocation(3, error)
    assert with_memory_retry(make, torch.device("cuda", 0)) == "tensor"
    assert len(attempts) == 4


def test_another_cuda_error_is_raised_at_once(monkeypatch):
    monkeypatch.setattr(gpu_memory.time, "sleep", lambda seconds: None)
    make, attempts = _flaky_allocation(3, RuntimeError("CUDA error: an illegal memory access was encountered"))
    with pytest.raises(RuntimeError, match="illegal memory access"):
        with_memory_retry(make, torch.device("cuda", 0))
    assert len(attempts) == 1


@pytest.mark.parametrize(("error", "expected"), [(ALLOCATOR_OOM, True), (RUNTIME_OOM, True),
                                                 (RuntimeError("CUDA error: misaligned address"), False),
                                                 (MemoryError(), False)])
def test_what_counts_as_a_gpu_out_of_memory(error, expected):
    assert gpu_memory.out_of_memory(error) is expected


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


def test_on_a_cpu_huge_storage_is_plain_lazily_backed_memory():
    storage = gpu_memory.huge_storage(2**32, torch.float32, "cpu")
    assert storage.shape == (2**32,) and storage.device.type == "cpu"
    assert gpu_memory.sparse_huge_inputs("cpu")


@pytest.mark.gpu
def test_a_huge_view_on_a_gpu_backs_only_the_pages_its_rows_touch():
    assert gpu_memory.sparse_huge_inputs("cuda"), "this GPU does not page managed memory on demand"
    values = torch.randn(HUGE_MAX_ROWS, 1024)
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    x = Layout(LayoutKind.HUGE_OFFSET).materialize(values, "cuda")
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    assert x.untyped_storage().nbytes() > 8 * 2**30  # the span is all there...
    assert free_before - free_after < 1 << 30  # ...but not backed
    assert torch.equal(x.cpu(), values)
    assert torch.equal(torch.logsumexp(x, dim=1).cpu(), torch.logsumexp(values.cuda(), dim=1).cpu())


@pytest.mark.gpu
def test_an_untouched_page_of_a_huge_storage_reads_as_zeros_and_freeing_gives_the_memory_back():
    storage = gpu_memory.huge_storage(2**32, torch.float32, "cuda")
    assert storage[2**31 + 12345].item() == 0.0  # where a wrapped int32 offset lands
    storage[2**32 - 1] = 7.0
    assert storage[2**32 - 1].item() == 7.0
    del storage
    torch.cuda.synchronize()
    # Sixty of them at once would be 960 GiB if any were dense.
    many = [gpu_memory.huge_storage(2**32, torch.float32, "cuda") for _ in range(60)]
    for storage in many:
        storage[2**31] = 1.0
    assert sum(storage[2**31].item() for storage in many) == 60.0


@pytest.mark.gpu
def test_a_kernel_whose_32_bit_row_offsets_wrap_reads_zeros_from_a_sparse_huge_view_not_a_fault():
    from mutants.patched import int32_offsets  # the reference kernel with int32 row offsets
    from reference import lse

    values = torch.randn(3, 8) + 5.0
    x = Layout(LayoutKind.HUGE_OFFSET).materialize(values, "cuda")
    wrong = int32_offsets(x).cpu()
    torch.cuda.synchronize()  # no illegal address: the wrapped row landed on a page that reads zeros
    right = lse(x).cpu()
    assert torch.allclose(right, torch.logsumexp(values.double(), dim=1).float())
    assert torch.allclose(wrong[-1], torch.logsumexp(torch.zeros(8), dim=0))  # the last row read zeros
    assert not torch.allclose(wrong, right)


@pytest.mark.gpu
def test_a_kernel_whose_32_bit_column_offsets_wrap_reads_zeros_from_a_huge_column_stride_view():
    from doubles import int32_index  # 64-bit row offsets, 32-bit column offsets

    values = torch.randn(4, 3) + 5.0
    x = Layout(LayoutKind.HUGE_COLUMN_STRIDE).materialize(values, "cuda")
    assert x.stride(1) * 2 >= 2**31
    wrong = int32_index.lse_int32_columns(x).cpu()
    torch.cuda.synchronize()  # no fault: the wrapped column landed on pages that read zeros
    right = torch.logsumexp(values.double(), dim=1).float()
    with_zeros = torch.logsumexp(torch.cat([values[:, :2], torch.zeros(4, 1)], dim=1).double(), dim=1).float()
    assert torch.allclose(wrong, with_zeros) and not torch.allclose(wrong, right)
    assert torch.allclose(int32_index.lse_int32_columns(Layout(LayoutKind.HUGE_OFFSET).materialize(values, "cuda")).cpu(),
                          right)
