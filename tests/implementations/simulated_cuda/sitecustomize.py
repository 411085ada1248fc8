"""A CUDA machine, simulated on a CPU-only one: with this folder on PYTHONPATH, every Python
process (the fuzzer, its fork servers, drivers and workers) sees ``torch.cuda.is_available()``
True and one device, as on a GPU host, though no kernel can run on it. So the project's kernels
and a candidate's are decorated for the GPU unless something turns Triton's interpreter on first:
what ``--device cpu`` must do on a real GPU machine, tested without one.

torch is patched when it is first imported, not imported here: importing it starts a thread, and
the grader must start its threads only after it took control of its signals (fuzz.isolation.guard.signals).

A CUDA build of torch also maps gigabytes of address space (its libraries) before any candidate
runs, which a worker's address-space limit must not charge to the candidate: 8 GiB of address
space are reserved here likewise (no access, no memory behind it), in every process."""

import importlib.abc
import importlib.util
import mmap
import sys


class _SeesACudaDevice(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.cuda.is_available = lambda: True
            module.cuda.device_count = lambda: 1

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _SeesACudaDevice())

_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)  # Linux's value, where the module has no name for it
_LIBRARIES = mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
                       prot=getattr(mmap, "PROT_NONE", 0))
