"""A CUDA machine, simulated on a CPU-only one: with this folder on PYTHONPATH, every Python
process (the fuzzer, its fork servers, drivers and workers) sees ``torch.cuda.is_available()``
True and one device, as on a GPU host, though no kernel can run on it. So the project's kernels
and a candidate's are decorated for the GPU unless something turns Triton's interpreter on first:
what ``--device cpu`` must do on a real GPU machine, tested without one.

A CUDA build of torch also maps gigabytes of address space (its libraries) before any candidate
runs, which a worker's address-space limit must not charge to the candidate: 8 GiB of address
space are reserved here likewise (no access, no memory behind it), in every process."""

import mmap

import torch

torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1

_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)  # Linux's value, where the module has no name for it
_LIBRARIES = mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
                       prot=getattr(mmap, "PROT_NONE", 0))
