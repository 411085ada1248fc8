"""flash-attn's Triton cross-entropy, the LSE recovered from its per-row loss.

`flash_attn.ops.triton.cross_entropy.cross_entropy_loss(logits, labels)` (the loss of the training
scripts of flash-attn's repository, and of the GPT models it ships) runs the Triton kernel
`cross_entropy_fwd_kernel`: an online softmax over blocks of min(16384, next_pow2(V)) columns,

    m_new = max(m, max(block));  l = exp(m - m_new) * l + sum(exp(block - m_new));  lse = log(l) + m

and returns the unreduced float32 loss and z-loss. With no label smoothing, logit_scale 1 and no
z-loss

    loss_i = lse_i - x[i, target_i]      so      lse_i = loss_i + x[i, target_i],

and with target_i = argmax_j x[i, j] the loss lies in [0, log N], so adding the target logit back
costs one float32 rounding (as for Liger's cross-entropy, liger_cross_entropy.py).

flash-attn's package `__init__` imports its compiled CUDA extension (`flash_attn_2_cuda`); the
Triton module imports nothing else of the package, so the adapter imports that file as published
without running the package's `__init__`. Its launcher enters `torch.cuda.device(logits.device.index)`
to pick the GPU to launch on, which raises for a CPU tensor (its index is None); on the CPU the
adapter makes that guard a no-op for the call, and the kernel runs in Triton's interpreter.

Cross-entropy defines no loss for a row with no finite logit nor for N = 0: the adapter answers
those itself. flash-attn's kernel does not compile when the row stride it is given is 1 (Triton makes
an integer argument equal to 1 a constant; docs/bugs-found.md): so that the fuzzer looks past that,
the adapter answers N = 1 itself (the LSE of one logit is the logit) and gives a single row whose
row stride is 1 (a transposed column) to flash-attn as a fresh contiguous copy. Declared contract: finite values (a +inf logit makes the loss inf - inf), dtypes
float32, float16, bfloat16 (those of flash-attn's own cross-entropy tests), a float32 result.

Run with flash-attn 2.8.3.post2, installed from its source distribution without building the CUDA
extension (the Triton kernels are plain Python):

    FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE FLASH_ATTENTION_FORCE_BUILD=TRUE \
        pip install --no-deps --no-build-isolation flash-attn==2.8.3.post2
    lse-fuzz check examples/real_world/flash_attn_cross_entropy.py:lse --device cpu \
        --contract finite --dtypes float32,float16,bfloat16 --output-dtype float32
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import sys
from pathlib import Path
from unittest import mock

import torch


def _import_module_file(name: str):
    """The module ``name`` of an installed package, executed from its file without the package's
    ``__init__`` (flash-attn's imports its CUDA extension); ImportError when it is not installed."""
    top, *parts = name.split(".")
    package = importlib.util.find_spec(top)
    if package is None or not package.submodule_search_locations:
        raise ImportError(f"{top} is not installed: FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE FLASH_ATTENTION_FORCE_BUILD=TRUE "
                          "pip install --no-deps --no-build-isolation flash-attn==2.8.3.post2")
    path = Path(package.submodule_search_locations[0], *parts).with_suffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


flash_attn_cross_entropy = _import_module_file("flash_attn.ops.triton.cross_entropy")


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp from flash-attn's per-row cross-entropy loss."""
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=torch.float32, device=x.device)
    # Triton makes a row stride of 1 a constant, and the kernel's logits_row_stride.to(tl.int64)
    # does not compile for one (docs/bugs-found.md): such inputs are answered or copied here.
    if cols == 1:
        return x[:, 0].float().clone()
    if x.stride(1) == 1 and x.stride(0) == 1:   # one row (rows > 1 would overlap)
        x = torch.empty_like(x, memory_format=torch.contiguous_format).copy_(x)
    target = x.argmax(dim=1)
    # The launcher's device guard means nothing for a CPU tensor (and raises for one).
    device_guard = (contextlib.nullcontext() if x.is_cuda
                    else mock.patch.object(torch.cuda, "device", contextlib.nullcontext))
    with device_guard:
        loss, _ = flash_attn_cross_entropy.cross_entropy_loss(x, target)
    target_logit = x.gather(1, target[:, None])[:, 0]
    recovered = loss.float() + target_logit.float()
    no_finite_logit = torch.isneginf(x).all(dim=1)
    return torch.where(no_finite_logit, torch.full_like(recovered, -math.inf), recovered)
