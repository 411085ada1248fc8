"""Which GPUs a pool spreads over, and the name that tells one physical GPU from another."""

from __future__ import annotations

import pytest
import torch

from fuzz.gpu_memory import gpu_name
from fuzz.isolation import spread_over


@pytest.mark.parametrize(("device", "visible", "expected"), [
    ("cuda", "0,1", ["0", "1"]),
    ("cuda", "2, 3,", ["2", "3"]),
    ("cuda", "GPU-aa,GPU-bb", ["GPU-aa", "GPU-bb"]),
    ("cuda", "1", []),  # one GPU: nothing to spread
    ("cuda", "", []),  # none visible
    ("cuda:1", "0,1", []),  # the user chose a GPU: every job runs there
    ("cpu", "0,1", []),
])
def test_only_an_unindexed_cuda_over_several_visible_gpus_is_spread(device, visible, expected):
    assert spread_over(device, {"CUDA_VISIBLE_DEVICES": visible}) == expected


def test_without_visible_devices_every_gpu_torch_counts_is_used(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert spread_over("cuda", {}) == ["0", "1", "2"]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert spread_over("cuda", {}) == []


@pytest.mark.gpu
def test_each_gpu_has_its_own_file_safe_name():
    names = [gpu_name(index) for index in range(torch.cuda.device_count())]
    assert len(set(names)) == len(names)
    assert all(name.replace("-", "").replace("_", "").replace(".", "").isalnum() for name in names)
    assert gpu_name() == gpu_name(torch.cuda.current_device())
