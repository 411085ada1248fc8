"""vLLM's Triton merge_attn_states: a cached prefix's attention state merged with the new suffix's.

vLLM merges partial attention results (chunked prefill, cascade attention, MLA's context chunks)
with `merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse)`
(section 2.2 of arXiv 2501.01005): per token t and head h,

    m = max(s_a, s_b),   s = m + log(e^(s_a - m) + e^(s_b - m)),   v = (e^(s_a - m) v_a + e^(s_b - m) v_b) / e^(s - m)

with natural-log LSEs. Its public entry (vllm/v1/attention/ops/merge_attn_states.py) takes a
compiled kernel when v is float32, float16 or bfloat16 and D is a multiple of 4 (float32) or 8, on
NVIDIA GPUs (0.25.0) and also AMD CDNA3 and later (0.34.0, whose CPU platform has a torch
fallback); everywhere else (other GPUs, other D, FP8 inputs) it takes the Triton kernel adapted
here, the `merge_attn_states` of vllm/v1/attention/ops/triton_merge_attn_states.py (in 0.11.0 and
before, vllm/attention/ops/). Its code runs as published: on a CPU through Triton's interpreter.

The adaptation:

* vLLM's LSE tensors are (H, T) (FlashAttention's layout); the fuzzer's are (T, H). The adapter
  passes `s_a.t()` and `s_b.t()`: a fuzzer's "transposed" LSE (a (H, T) storage viewed as (T, H))
  becomes the contiguous (H, T) tensor vLLM's backends hand over, and a contiguous (T, H) LSE a
  transposed (H, T) view, the layout FlashAttention 2 can return (vLLM PR 22003).
* v_a and v_b are passed as drawn when they are token-major: the kernel reads their head stride
  (`prefix_output.stride(1)`, a head dimension padded by the attention backend) and takes the
  token stride to be H times it, as every vLLM caller's (T, H, D) output is. A head-major v (a
  (H, T, D) storage viewed as (T, H, D)) is outside that assumption (the kernel reads past the
  tensor: docs/bugs-found.md, "Not bugs"), and the adapter makes it contiguous first.
  `output` is a new contiguous (T, H, D) tensor of v_a's dtype, and `output_lse` a new contiguous
  (H, T) float32 tensor, returned as its (T, H) view.
* No `prefill_tokens_with_context` (every token has a prefix, as when it is None) and no FP8 scale.

Only the kernel's file is loaded, from the `vllm` package found on the path, without running
vLLM's `__init__` (which imports most of vLLM's dependencies). The file's imports of vLLM's own
modules are stubbed while it executes, and only those: `vllm.triton_utils` gives Triton's own
`triton` and `triton.language` (as vLLM's does when Triton is installed), and from 0.20 on
`vllm.platforms.current_platform.fp8_dtype()` gives `torch.float8_e4m3fn` (NVIDIA's FP8 type;
the file reads its finfo for the FP8 clamp, which these calls never take).

Run with vLLM 0.25.0 (the last release with both bugs of docs/bugs-found.md, 13: NaN for two empty
states, and 14: the LSE tensors read as contiguous) and 0.34.0 (both fixed), CPU through Triton's
interpreter; each installed apart, its folder on PYTHONPATH for this adapter alone:

    pip install --no-deps --target build/vllm-0.34.0 vllm==0.34.0
    PYTHONPATH=build/vllm-0.34.0 lse-fuzz check examples/real_world/vllm_merge_attn_states.py:merge_state \
        --op merge_state --device cpu
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

import torch
import triton
import triton.language as tl

KERNEL_FILES = ("v1/attention/ops/triton_merge_attn_states.py",  # vLLM 0.15.0 (at least) and later
                "attention/ops/triton_merge_attn_states.py")  # vLLM 0.11.0 and before


def _vllm_package() -> Path:
    spec = importlib.util.find_spec("vllm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("vllm is not installed: pip install --no-deps --target DIR vllm==0.34.0 "
                          "and put DIR on PYTHONPATH")
    return Path(list(spec.submodule_search_locations)[0])


def _stubs() -> dict[str, types.ModuleType]:
    """The vLLM modules the kernel's file imports, reduced to what it uses."""
    package, platforms, triton_utils = (types.ModuleType(name) for name in
                                        ("vllm", "vllm.platforms", "vllm.triton_utils"))
    package.__path__ = []
    platforms.current_platform = types.SimpleNamespace(fp8_dtype=lambda: torch.float8_e4m3fn)
    triton_utils.triton, triton_utils.tl = triton, tl
    return {"vllm": package, "vllm.platforms": platforms, "vllm.triton_utils": triton_utils}


def _load_kernel_module(package: Path) -> types.ModuleType:
    path = next((package / name for name in KERNEL_FILES if (package / name).is_file()), None)
    if path is None:
        raise ImportError(f"{package} holds none of {', '.join(KERNEL_FILES)}")
    name = f"_vllm_{VERSION.replace('.', '_')}_triton_merge_attn_states"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    stubs = {key: stub for key, stub in _stubs().items() if key not in sys.modules}
    sys.modules.update(stubs)
    try:
        sys.modules[name] = module  # triton.jit finds the kernel's module by name
        spec.loader.exec_module(module)
    finally:
        for key in stubs:  # a real vLLM imported later is not shadowed
            del sys.modules[key]
    return module


VERSION = importlib.metadata.version("vllm")
triton_merge_attn_states = _load_kernel_module(_vllm_package())


def merge_state(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor):
    """(v, s) of the two states merged by vLLM's Triton kernel; s (T, H) float32, natural log."""
    tokens, heads, _ = v_a.shape
    v_a, v_b = (v if v.stride(0) == heads * v.stride(1) and v.stride(2) == 1 else v.contiguous() for v in (v_a, v_b))
    output = torch.empty(v_a.shape, dtype=v_a.dtype, device=v_a.device)
    output_lse = torch.empty((heads, tokens), dtype=torch.float32, device=v_a.device)  # vLLM's (H, T)
    triton_merge_attn_states.merge_attn_states(output, v_a, s_a.t(), v_b, s_b.t(), output_lse=output_lse)
    return output, output_lse.t()
