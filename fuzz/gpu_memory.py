"""Huge-offset inputs on a GPU: storage that is backed only where it is used, and, where a GPU
cannot give that, how many dense ones may exist at once across every process of a run.

A view whose elements lie 2**31 elements into its storage needs a storage of about 2**32 elements
(see :class:`fuzz.layouts.Layout`). On a CPU that is address space nobody touches. On a GPU,
:func:`huge_storage` takes it as CUDA managed memory where the GPU pages it on demand (every
Linux data-centre GPU since Pascal): only the pages the view's rows (or a wrong read) touch are
backed, a few megabytes, and an untouched page reads as zeros, as a fresh dense allocation would.
Elsewhere it is 8 or 16 GiB of device memory, in the fuzzer (twice while a metamorphic check holds
a transformed copy) and once more in an isolated worker; with a dozen jobs fuzzing side by side
(``grade -j``, ``mutants -j``), a few huge examples at the same moment would run the GPU out of
memory and make a correct kernel look broken. So there a process takes one of a fixed number of
slots (file locks shared by every process on the machine) for the whole of a huge example, and
gives the memory back before it lets the slot go.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
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

__all__ = ["HUGE_INPUT_BYTES", "MEMORY_WAIT", "HugeInputSlots", "gpu_name", "huge_storage", "out_of_memory",
           "others_fill_the_gpu", "sparse_huge_inputs", "with_memory_retry"]

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


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says the GPU had no room: PyTorch's allocator (``torch.OutOfMemoryError``),
    or the CUDA runtime itself (``CUDA error: out of memory`` as a ``torch.AcceleratorError``, e.g.
    a kernel launch on a GPU other processes filled)."""
    return isinstance(exc, torch.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and "CUDA error: out of memory" in str(exc))


CONTEXT_BYTES = 1 << 30
"""What this process's CUDA context and libraries hold beside PyTorch's allocator (0.6-1.2 GiB
measured per process on an H100)."""


def others_fill_the_gpu(device: torch.device | None = None) -> bool:
    """Whether other processes hold more than half of this process's GPU (its current one).

    Then an allocation the GPU refused is the machine's doing (jobs side by side), not the
    candidate's: its out-of-memory is no verdict on it. What this process holds is PyTorch's
    reserved memory and :data:`CONTEXT_BYTES`; False where CUDA is not started or cannot say.
    """
    try:
        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return False
        free, total = torch.cuda.mem_get_info(device)
        mine = torch.cuda.memory_reserved(device)
    except Exception:  # noqa: BLE001 - no answer: the error stands as the candidate's
        return False
    return total - free - mine - CONTEXT_BYTES > total // 2


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
        except RuntimeError as exc:  # torch.OutOfMemoryError is one
            if not out_of_memory(exc) or time.monotonic() + delay > deadline:
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


# --------------------------------------------------------------------------------------------
# Storage backed on demand (CUDA managed memory), through the driver API: torch has no allocator
# for it, and the driver library is there wherever a GPU is.

_CONCURRENT_MANAGED_ACCESS = 89  # CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
_ATTACH_GLOBAL = 1  # CU_MEM_ATTACH_GLOBAL


@functools.cache
def _driver() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    lib.cuMemAllocManaged.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_uint]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
    for name in ("cuMemAllocManaged", "cuMemFree_v2", "cuDeviceGetAttribute"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


@functools.cache
def _pages_on_demand(index: int) -> bool:
    lib = _driver()
    if lib is None:
        return False
    torch.cuda.synchronize(index)  # the device's primary context, current on this thread
    value = ctypes.c_int(0)
    return lib.cuDeviceGetAttribute(ctypes.byref(value), _CONCURRENT_MANAGED_ACCESS, index) == 0 and value.value == 1


def sparse_huge_inputs(device: torch.device | str) -> bool:
    """Whether :func:`huge_storage` on ``device`` backs only the pages used (always on a CPU;
    on a GPU that pages managed memory on demand). Then a huge input costs megabytes, and no
    process waits for a :class:`HugeInputSlots` slot."""
    device = torch.device(device)
    return device.type == "cpu" or (device.type == "cuda" and _pages_on_demand(_index(device)))


class _Managed:
    """One managed allocation, shown to torch as a byte array (``__cuda_array_interface__``): the
    tensor keeps this object alive and drops it when its storage goes, which frees the memory."""

    def __init__(self, nbytes: int, index: int) -> None:
        self.pointer = ctypes.c_uint64(0)
        self.index = index
        with torch.cuda.device(index):
            torch.cuda.synchronize(index)
            status = _driver().cuMemAllocManaged(ctypes.byref(self.pointer), max(nbytes, 1), _ATTACH_GLOBAL)
        if status != 0:
            raise torch.OutOfMemoryError(f"CUDA out of memory: cuMemAllocManaged of {nbytes} bytes failed "
                                         f"(CUresult {status}).")
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (self.pointer.value, False),
                                         "version": 3, "strides": None}

    def __del__(self) -> None:
        # Kernels still queued may use the memory: wait for them first. A context a candidate
        # broke (an illegal access) fails here; the process is about to go, memory and all.
        try:
            torch.cuda.synchronize(self.index)
            _driver().cuMemFree_v2(self.pointer.value)
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass


def huge_storage(elements: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """A 1-D tensor of ``elements`` uninitialized elements whose untouched pages cost nothing:
    ``torch.empty`` on a CPU (the kernel backs pages on first touch), CUDA managed memory on a
    GPU that pages it on demand, and a dense ``torch.empty`` on any other GPU."""
    device = torch.device(device)
    index = _index(device) if device.type == "cuda" else None
    if index is None or not _pages_on_demand(index):
        return torch.empty(elements, dtype=dtype, device=device)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    return torch.as_tensor(_Managed(elements * itemsize, index), device=device).view(dtype)
