"""fuzz.isolation.worker.error_kind: what a candidate's error counts as, GPU memory above all."""

from __future__ import annotations

import pytest
import torch

from fuzz import gpu_memory
from fuzz.isolation.worker.error_kind import error_kind

GiB = 1 << 30
CUDA_OOM = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total "
                                  "capacity of 79.19 GiB of which 20.00 MiB is free.")
RUNTIME_OOM = RuntimeError("CUDA error: out of memory")


def _gpu(monkeypatch, *, free, total=80 * GiB, mine=0, started=True):
    """This process sees a started CUDA GPU with ``free`` bytes left, ``mine`` reserved by PyTorch."""
    monkeypatch.setattr(gpu_memory.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gpu_memory.torch.cuda, "is_initialized", lambda: started)
    monkeypatch.setattr(gpu_memory.torch.cuda, "mem_get_info", lambda device=None: (free, total))
    monkeypatch.setattr(gpu_memory.torch.cuda, "memory_reserved", lambda device=None: mine)


@pytest.mark.parametrize("error", [CUDA_OOM, RUNTIME_OOM], ids=["allocator", "runtime"])
def test_a_gpu_others_fill_is_the_machines_fault_not_the_candidates(monkeypatch, error):
    _gpu(monkeypatch, free=GiB // 50, mine=2 * GiB)  # 77 GiB held by other processes
    assert error_kind(error) == "harness"


@pytest.mark.parametrize("error", [CUDA_OOM, RUNTIME_OOM], ids=["allocator", "runtime"])
def test_a_candidate_that_filled_the_gpu_itself_ran_out_of_memory(monkeypatch, error):
    _gpu(monkeypatch, free=GiB // 50, mine=70 * GiB)  # the candidate's own tensors fill it
    assert error_kind(error) == "out_of_memory"


def test_a_request_larger_than_the_gpu_is_the_candidates(monkeypatch):
    _gpu(monkeypatch, free=78 * GiB, mine=0)  # nearly empty GPU: the request itself was too large
    assert error_kind(CUDA_OOM) == "out_of_memory"


def test_without_a_started_gpu_it_is_the_candidates(monkeypatch):
    _gpu(monkeypatch, free=0, started=False)
    assert error_kind(CUDA_OOM) == "out_of_memory"


def test_the_hosts_memory_stays_a_resource_limit_whatever_the_gpu_holds(monkeypatch):
    _gpu(monkeypatch, free=0, mine=0)
    assert error_kind(MemoryError()) == "out_of_memory"
    assert error_kind(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried 8 GB")) == "out_of_memory"


def test_other_errors_keep_their_kinds(monkeypatch):
    _gpu(monkeypatch, free=0, mine=0)
    assert error_kind(RuntimeError("CUDA error: an illegal memory access was encountered")) == "cuda_error"
    assert error_kind(ValueError("no")) == "exception"
