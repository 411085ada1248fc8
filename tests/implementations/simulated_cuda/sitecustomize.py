"""A CUDA machine, simulated on a CPU-only one: with this folder on PYTHONPATH, every Python
process (the fuzzer, its fork servers, drivers and workers) sees ``torch.cuda.is_available()``
True and one device, as on a GPU host, though no kernel can run on it. So the project's kernels
and a candidate's are decorated for the GPU unless something turns Triton's interpreter on first:
what ``--device cpu`` must do on a real GPU machine, tested without one.

torch is patched when it is first imported, not imported here: importing it starts a thread, and
the grader must start its threads only after it took control of its signals (fuzz.isolation.guard.signals).

A CUDA build of torch also maps gigabytes of address space (its libraries) before any candidate
runs, which a worker's address-space limit must not charge to the candidate: 8 GiB of address
space are reserved here likewise (no access, no memory behind it), in every process.

And CUDA reserves more when it starts: on an H200 host, the first ``torch.cuda.is_available()``
took a process from 3.66 to 15.82 GiB of address space, with ``CUDA_VISIBLE_DEVICES=""`` from
3.66 to 3.73 GiB (a correct candidate asking at import then left no room under its worker's
limit for a huge-offset input). The simulation does the same: ``is_available()`` reserves 12 GiB
once, and an empty ``CUDA_VISIBLE_DEVICES`` hides the device, as it does CUDA's."""

import importlib.abc
import importlib.util
import mmap
import os
import sys

_STARTED = []


def _is_available() -> bool:
    """A device unless CUDA_VISIBLE_DEVICES is empty; the first call reserves what CUDA's start does
    (without the room for it, under an address-space limit, CUDA would not start: no device)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return False
    if not _STARTED:
        try:
            _STARTED.append(mmap.mmap(-1, 12 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
                                      prot=getattr(mmap, "PROT_NONE", 0)))
        except OSError:
            return False
    return True


class _SeesACudaDevice(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.cuda.is_available = _is_available
            module.cuda.device_count = lambda: int(_is_available())

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _SeesACudaDevice())

_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)  # Linux's value, where the module has no name for it
_LIBRARIES = mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
                       prot=getattr(mmap, "PROT_NONE", 0))
