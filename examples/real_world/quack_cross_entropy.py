"""quack's cross-entropy forward (a CuTe DSL kernel), which returns the LSE with return_lse=True.

    loss, lse = quack.cross_entropy.cross_entropy_fwd(x, target, return_lse=True)
    # x: (M, N) float16, bfloat16 or float32; lse: (M,) float32

quack computes each row's max and sum of exp in one pass over the row held in registers and shared
memory (quack/cross_entropy.py); the LSE is written directly, so the target only matters for the
loss (zeros here). Its wrapper asserts x.dtype in (float16, bfloat16, float32): float64 is not
supported, so it is not drawn.

GPU only (NVIDIA Hopper or Blackwell): it needs nvidia-cutlass-dsl, whose CUDA libraries do not
load without a GPU; nothing of it runs in Triton's interpreter. quack-kernels 0.6.5 with
nvidia-cutlass-dsl 4.8.1, to be run on the H200 with

    lse-fuzz check examples/real_world/quack_cross_entropy.py:lse --device cuda \
        --dtypes float32,float16,bfloat16 --output-dtype float32
"""

from __future__ import annotations

import torch
from quack.cross_entropy import cross_entropy_fwd


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp returned by quack's cross-entropy forward."""
    target = torch.zeros(x.shape[0], dtype=torch.int64, device=x.device)
    _, row_lse = cross_entropy_fwd(x, target, return_lse=True)
    return row_lse
