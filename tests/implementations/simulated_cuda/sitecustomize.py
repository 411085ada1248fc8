"""A CUDA machine, simulated on a CPU-only one: with this folder on PYTHONPATH, every Python
process (the fuzzer, its fork servers, drivers and workers) sees ``torch.cuda.is_available()``
True and one device, as on a GPU host, though no kernel can run on it. So the project's kernels
and a candidate's are decorated for the GPU unless something turns Triton's interpreter on first:
what ``--device cpu`` must do on a real GPU machine, tested without one."""

import torch

torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
