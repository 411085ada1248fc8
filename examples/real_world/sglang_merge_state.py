"""SGLang's Triton merge_state: two attention states (a prefix's and a suffix's) merged into one.

SGLang's `merge_state(prefix_output, prefix_lse, suffix_output, suffix_lse)`
(sglang/srt/layers/attention/merge_state.py) takes sgl-kernel's CUDA `merge_state_v2` on NVIDIA
GPUs when v is float32, float16 or bfloat16 and D is a multiple of 4 (float32) or 8, and falls
back to the Triton kernel adapted here, `merge_state_triton`, everywhere else (AMD GPUs, other D);
the AITer backend and the FlashInfer backend (when H is too large for FlashInfer's CUDA merge)
call `merge_state_triton` directly. Per token t and head h, with natural-log LSEs:

    m = max(s_a, s_b),   s = log(e^(s_a - m) + e^(s_b - m)) + m,   v = (e^(s_a - m) v_a + e^(s_b - m) v_b) / e^(s - m)

The kernel file is sglang/kernels/ops/attention/merge_state.py (0.5.23; the same file was
sglang/srt/layers/attention/triton_ops/merge_state.py up to 0.5.10, byte for byte the same
kernel). It imports only torch and Triton, so it is loaded alone from the `sglang` package found
on the path, without running SGLang's `__init__` and without any stub. Its code runs as published:
on a CPU through Triton's interpreter.

The adaptation: SGLang's shapes are the fuzzer's, v (T, H, D) and LSEs (T, H). The kernel indexes
every tensor as contiguous (`token_idx * num_heads + head_idx`, no strides), and SGLang's callers
make their LSEs contiguous before the call ("the merge_state_triton needs lse layout [tokens,
heads]", aiter_backend.py, with `lse.transpose(0, 1).contiguous()`): the adapter passes the four
tensors `.contiguous()`, as they do (a non-contiguous one is read wrong: docs/bugs-found.md,
"Not bugs"). The result is the kernel's own (`output`, `output_lse`), allocated by it.

Run with sglang 0.5.23 (CPU through Triton's interpreter), installed apart, its folder on
PYTHONPATH for this adapter alone:

    pip install --no-deps --target build/sglang-0.5.23 sglang==0.5.23
    PYTHONPATH=build/sglang-0.5.23 lse-fuzz check examples/real_world/sglang_merge_state.py:merge_state \
        --op merge_state --device cpu
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

import torch

KERNEL_FILES = ("kernels/ops/attention/merge_state.py",  # sglang 0.5.23
                "srt/layers/attention/triton_ops/merge_state.py")  # sglang 0.5.10


def _sglang_package() -> Path:
    spec = importlib.util.find_spec("sglang")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("sglang is not installed: pip install --no-deps --target DIR sglang==0.5.23 "
                          "and put DIR on PYTHONPATH")
    return Path(list(spec.submodule_search_locations)[0])


def _load_kernel_module(package: Path) -> types.ModuleType:
    path = next((package / name for name in KERNEL_FILES if (package / name).is_file()), None)
    if path is None:
        raise ImportError(f"{package} holds none of {', '.join(KERNEL_FILES)}")
    name = f"_sglang_{VERSION.replace('.', '_')}_merge_state"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton.jit finds the kernel's module by name
    spec.loader.exec_module(module)
    return module


VERSION = importlib.metadata.version("sglang")
sglang_merge_state = _load_kernel_module(_sglang_package())


def merge_state(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor):
    """(v, s) of the two states merged by SGLang's Triton kernel; s (T, H) float32, natural log."""
    return sglang_merge_state.merge_state_triton(v_a.contiguous(), s_a.contiguous(), v_b.contiguous(),
                                                 s_b.contiguous())
