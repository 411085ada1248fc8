"""vLLM's split-K combine: the second stage of its Triton decode attention (flash decoding).

vLLM's Triton decode attention (vllm/v1/attention/ops/triton_decode_attention.py, under the
Triton MLA backend, ROCm's AITer MLA and the TurboQuant backends) splits each request's keys into
S = num_kv_splits ranges. Stage 1 writes, per request b, head h and split k, the split's
normalised output and its natural-log LSE into one float32 buffer `attn_logits` of shape
(batch, heads, S, D + 1) (the LSE at index D); stage 2, `_fwd_kernel_stage2` launched by
`_decode_softmax_reducev_fwd`, combines the splits with an online softmax,

    m_k = max(m_{k-1}, s_k),   acc_k = acc_{k-1} e^(m_{k-1} - m_k) + e^(s_k - m_k) v_k,
    d_k = d_{k-1} e^(m_{k-1} - m_k) + e^(s_k - m_k),   v_out = acc_S / d_S,   s_out = m_S + log d_S

and writes v_out into `o` (the query's dtype) and s_out into a float32 `lse`. The adapter calls
`_decode_softmax_reducev_fwd` as the decode path does; its code runs as published, on a CPU
through Triton's interpreter.

The adaptation, and why it is not a plain call:

* Stage 2 does not learn that a split is empty from its LSE: it reads the request's key count
  `b_seq_len[b]`, splits it into S ranges of cdiv(len, S) keys, and skips the empty ranges, which
  are always the last ones; stage 1 leaves an empty split's slots unwritten. And all heads of a
  request share its keys. The fuzzer's empty split (s = -inf, NaN in its v) is per (token, head).
  So each (t, h) pair is passed as its own request of one head (batch T * H; the kernel's
  programs are per (request, head) anyway), its non-empty splits first in their order, and
  `b_seq_len` the number of them: each such split holds one key, the rest are the empty ranges
  the kernel skips. A (t, h) with no non-empty split would be a request of no keys, where stage 2
  divides 0 by 0 (a decode always has a key); the adapter answers (0, -inf) for those itself.
* `attn_logits` is vLLM's own buffer (always float32, contiguous), so the fuzzer's layouts of v
  and s are packed into it and do not reach the kernel; v of float16 or bfloat16 becomes float32
  exactly, as stage 1 writes it. `o` has v's dtype, as the query's; `lse` is float32.
* `q` and `v_buffer` are read by the launcher for their shapes only (batch and heads; D): `o` is
  passed for both.

The kernel's file is loaded alone from the `vllm` package found on the path, without running
vLLM's `__init__`; its imports of vLLM's own modules are stubbed while it executes, and only those:
`vllm.triton_utils` gives Triton's own `triton` and `triton.language`, and
`vllm.platforms.current_platform.is_rocm()` is False (an NVIDIA GPU's launch options).

Run with vLLM 0.34.0 (CPU through Triton's interpreter), installed apart, its folder on PYTHONPATH
for this adapter alone:

    pip install --no-deps --target build/vllm-0.34.0 vllm==0.34.0
    PYTHONPATH=build/vllm-0.34.0 lse-fuzz check examples/real_world/vllm_split_k_combine.py:combine \
        --op combine --device cpu
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import sys
import types
from pathlib import Path

import torch
import triton
import triton.language as tl

KERNEL_FILE = "v1/attention/ops/triton_decode_attention.py"


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
    platforms.current_platform = types.SimpleNamespace(is_rocm=lambda: False)
    triton_utils.triton, triton_utils.tl = triton, tl
    return {"vllm": package, "vllm.platforms": platforms, "vllm.triton_utils": triton_utils}


def _load_kernel_module(package: Path) -> types.ModuleType:
    name = f"_vllm_{VERSION.replace('.', '_')}_triton_decode_attention"
    spec = importlib.util.spec_from_file_location(name, package / KERNEL_FILE)
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
triton_decode_attention = _load_kernel_module(_vllm_package())


def combine(v: torch.Tensor, s: torch.Tensor):
    """(v_out, s_out) of the S splits combined by vLLM's decode stage 2; s_out (T, H) float32."""
    splits, tokens, heads, dim = v.shape
    requests = tokens * heads  # one request of one head per (t, h)
    split_lse = s.permute(1, 2, 0).reshape(requests, splits)
    split_v = v.permute(1, 2, 0, 3).reshape(requests, splits, dim)
    empty = torch.isneginf(split_lse)
    order = torch.argsort(empty.to(torch.int8), dim=1, stable=True)  # non-empty splits first, in order
    attn_logits = torch.empty((requests, 1, splits, dim + 1), dtype=torch.float32, device=v.device)
    attn_logits[:, 0, :, :dim] = split_v.gather(1, order[..., None].expand(-1, -1, dim)).float()
    attn_logits[:, 0, :, dim] = split_lse.gather(1, order)
    seq_lens = (~empty).sum(dim=1).to(torch.int32)
    o = torch.empty((requests, 1, dim), dtype=v.dtype, device=v.device)
    lse = torch.empty((requests, 1), dtype=torch.float32, device=v.device)
    triton_decode_attention._decode_softmax_reducev_fwd(attn_logits, o, o, lse, o, seq_lens, splits)
    no_keys = seq_lens == 0
    o[no_keys], lse[no_keys] = 0.0, -math.inf
    return o.reshape(tokens, heads, dim), lse.reshape(tokens, heads)
