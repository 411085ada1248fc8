"""Huge-offset inputs on a GPU: how many may exist at once, across every process of a run.

A view whose elements lie 2**31 elements into its storage needs a storage of about 2**32 elements
(see :class:`fuzz.layouts.Layout`): on a CPU that is address space nobody touches, on a GPU it is
8 or 16 GiB of device memory, in the fuzzer (twice while a metamorphic check holds a transformed
copy) and once more in an isolated worker. With a dozen
jobs fuzzing side by side (``grade -j``, ``mutants -j``), a few huge examples at the same moment
would run the GPU out of memory and make a correct kernel look broken. So a process takes one of a
fixed number of slots (file locks shared by every process on the machine) for the whole of a huge
example, and gives the memory back before it lets the slot go.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import torch

T = TypeVar("T")

__all__ = ["HUGE_INPUT_BYTES", "MEMORY_WAIT", "HugeInputSlots", "gpu_name", "with_memory_retry"]

HUGE_INPUT_BYTES = (2**32 + 2**20) * 4
"""The largest huge-offset storage (2**32 elements of 4 bytes and a little)."""

# The fuzzer's copy, a metamorphic check's transformed copy, the worker's, and room for the rest.
_PER_SLOT = 3 * HUGE_INPUT_BYTES + (2 << 30)


class HugeInputSlots:
    """``slots(device).hold()``: wait for one of the GPU's slots, hold it for the block."""

    def __init__(self, device: torch.device, *, count: int | None = None, directory: Path | None = None) -> None:
        index = device.index if device.index is not None else torch.cuda.current_device()
        if count is None:
            count = max(1, torch.cuda.get_device_properties(index).total_memory // _PER_SLOT)
        self.count = count
        # Named after the physical GPU: processes that see it under different indices (drivers
        # spread over a host's GPUs each see theirs as cuda:0) share its slots, and only its.
        self.directory = directory or Path(tempfile.gettempdir()) / "lse-fuzz-huge-inputs" / gpu_name(index)
        self.directory.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def hold(self) -> Iterator[int]:
        files = [open(self.directory / f"slot-{k}.lock", "a+") for k in range(self.count)]
        try:
            while True:
                for k, handle in enumerate(files):
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue
                    try:
                        yield k
                    finally:
                        fcntl.flock(handle, fcntl.LOCK_UN)
                    return
                time.sleep(0.05)
        finally:
            for handle in files:
                handle.close()


MEMORY_WAIT = 120.0
"""Seconds an allocation of a huge input may wait for GPU memory another process is giving back."""


def with_memory_retry(make: Callable[[], T], device: torch.device, *, wait: float = MEMORY_WAIT) -> T:
    """``make()``, tried again while the GPU is out of memory, for up to ``wait`` seconds.

    Slots bound how many huge inputs exist at once, but a process that just left its slot may still
    be returning its memory (a collection, the caching allocator), and the CUDA contexts of a
    many-job run take their share: a short wait, not a verdict. On a CPU, or once the wait is over,
    the error is raised as it is.
    """
    if device.type != "cuda":
        return make()
    deadline = time.monotonic() + wait
    delay = 0.25
    while True:
        try:
            return make()
        except torch.OutOfMemoryError:
            if time.monotonic() + delay > deadline:
                raise
        gc.collect()
        torch.cuda.empty_cache()
        time.sleep(delay)
        delay = min(2 * delay, 8.0)


def gpu_name(index: int | None = None) -> str:
    """A file-name-safe name of the physical GPU behind ``cuda:index`` in this process (default:
    the current one), the same in every process whatever its ``CUDA_VISIBLE_DEVICES``: locks and
    memory slots that guard one GPU must be shared by exactly the processes that use it."""
    index = torch.cuda.current_device() if index is None else index
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is not None:
        name = f"gpu-{uuid}"
    else:  # older torch: the visible list and the index still tell GPUs apart
        name = f"cuda-{os.environ.get('CUDA_VISIBLE_DEVICES', 'all')}-{index}"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
