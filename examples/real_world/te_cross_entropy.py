"""TransformerEngine's Triton cross-entropy, the LSE recovered from its per-row loss.

TransformerEngine (NVIDIA's library under Megatron-LM and NeMo) computes its vocabulary-parallel
cross-entropy, `transformer_engine.pytorch.parallel_cross_entropy`, with the Triton kernel
`cross_entropy_forward_kernel` (transformer_engine/common/triton/cross_entropy.py). On one rank it
keeps an online softmax over blocks of min(32768, next_pow2(V)) columns,

    m_new = max(m, max(block));  d = d * exp(m - m_new) + sum(exp(block - m_new))

and returns, unreduced, the float32 loss

    loss_i = m_i + log d_i - x[i, target_i]      so      lse_i = loss_i + x[i, target_i].

With target_i = argmax_j x[i, j] the loss is log d_i, in [0, log N], so adding the target logit back
costs one float32 rounding (as for Liger's cross-entropy, liger_cross_entropy.py).

The adapter calls `cross_entropy_forward` of transformer_engine/pytorch/triton/cross_entropy.py, the
launcher that parallel_cross_entropy's autograd forward calls with the same arguments (no label
smoothing, no reduction, no process group, ignore index -100). parallel_cross_entropy itself adds a
validation that refuses a CPU tensor, and importing it (or any module under the
`transformer_engine` package) first loads TE's compiled CUDA libraries; so the two Triton modules
are imported from the installed package's files without running the package's `__init__`. Their
code runs as published, on the CPU through Triton's interpreter and on a GPU compiled.

Cross-entropy defines no loss for a row with no finite logit, and TE refuses a dimension of size 0
(`inp dimensions must be non-zero`, a documented limitation): the adapter answers those itself.
Declared contract: finite values (a +inf logit makes the loss inf - inf), dtypes float32 and
bfloat16 (the two TE accepts: `inp must have BF16 or FP32 dtype`), a float32 result.

Run with transformer-engine 2.20.2 (the pure-Python `transformer_engine` wheel; its CUDA parts are
not needed), CPU through Triton's interpreter. Install it out of the way of other libraries: on its
own, the `transformer_engine` package raises on import ("Found empty `transformer-engine` meta
package"), and peft (so Unsloth) imports any `transformer_engine` it finds:

    pip install --no-deps --target DIR transformer-engine==2.20.2
    PYTHONPATH=DIR lse-fuzz check examples/real_world/te_cross_entropy.py:lse --device cpu \
        --contract finite --dtypes float32,bfloat16 --output-dtype float32
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import torch


def _import_module_file(name: str):
    """The module ``name`` of an installed package, executed from its file without the package's
    ``__init__`` (TE's loads its CUDA libraries); ImportError when the package is not installed."""
    top, *parts = name.split(".")
    package = importlib.util.find_spec(top)
    if package is None or not package.submodule_search_locations:
        raise ImportError(f"{top} is not installed: pip install --no-deps --target DIR transformer-engine==2.20.2 "
                          "and put DIR on PYTHONPATH")
    path = Path(package.submodule_search_locations[0], *parts).with_suffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # the launcher's `from transformer_engine.common.triton... import` finds it here
    spec.loader.exec_module(module)
    return module


_import_module_file("transformer_engine.common.triton.cross_entropy")
te_triton_cross_entropy = _import_module_file("transformer_engine.pytorch.triton.cross_entropy")


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp from TransformerEngine's per-row cross-entropy loss."""
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return torch.full((rows,), -math.inf, dtype=torch.float32, device=x.device)
    target = x.argmax(dim=1)
    # (B, SQ, V) = (1, rows, cols): the kernel takes all three strides, so x's layout is kept.
    loss = te_triton_cross_entropy.cross_entropy_forward(
        x[None], target[None], label_smoothing=0.0, reduce_loss=False, dist_process_group=None,
        ignore_idx=-100, overwrite_input=False)[0][0]
    target_logit = x.gather(1, target[:, None])[:, 0]
    recovered = loss.float() + target_logit.float()
    no_finite_logit = torch.isneginf(x).all(dim=1)
    return torch.where(no_finite_logit, torch.full_like(recovered, -math.inf), recovered)
