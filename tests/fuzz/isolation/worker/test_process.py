"""fuzz.isolation.worker.process: what the worker does before any call (its calls are tested
through the proxy)."""

from __future__ import annotations

import pytest
import torch

from fuzz.isolation.worker import process


def _context_after(failures, message, monkeypatch):
    """Start a CUDA 'context' that fails ``failures`` times with ``message``; the attempts made."""
    attempts = []

    def empty(*args, **kwargs):
        attempts.append(1)
        if len(attempts) <= failures:
            raise RuntimeError(message)
        return None

    monkeypatch.setattr(process.torch, "empty", empty)
    monkeypatch.setattr(process.torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(process.time, "sleep", lambda seconds: None)
    return attempts


@pytest.mark.parametrize("message", ["CUDA error: out of memory",
                                     "CUDA error: CUDA-capable device(s) is/are busy or unavailable"])
def test_a_context_on_a_gpu_others_filled_is_tried_again(monkeypatch, message):
    # Eight checks side by side on one H100 filled it: a new worker's context failed with either.
    attempts = _context_after(2, message, monkeypatch)
    process._start_device("cuda:0")
    assert len(attempts) == 3


def test_another_cuda_error_at_the_start_is_raised_at_once(monkeypatch):
    attempts = _context_after(2, "CUDA error: no CUDA-capable device is detected", monkeypatch)
    with pytest.raises(RuntimeError, match="no CUDA-capable device"):
        process._start_device("cuda:0")
    assert len(attempts) == 1


def test_a_cpu_worker_starts_no_context(monkeypatch):
    attempts = _context_after(0, "", monkeypatch)
    process._start_device("cpu")
    assert attempts == []
