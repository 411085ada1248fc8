"""Returns an untouched 2 GiB tensor (lazily allocated: it costs the worker nothing) on every call:
a grader that copied whatever a worker hands back would hold gigabytes for one call, and a batch of
them would take the grader's machine down. The grader must judge it without receiving it."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(1 << 29, dtype=torch.float32)  # 2 GiB, never written
