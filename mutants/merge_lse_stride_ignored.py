"""Mutant: the LSE tensors are read as if contiguous, whatever their strides.

Patch: in ``_merge_state_kernel`` (reference/_merge_state_kernel.py) both LSE loads index by
``row`` (t * H + h, the offset of (t, h) in a contiguous (T, H) tensor) instead of
``token * stride_t + head * stride_h``.

Pitfall: LSEs come out of attention kernels in layouts of their own: FlashAttention returns them
head-major ((B, H, T) or (H, T): a transposed view once seen as (T, H)), and a varlen call may hand
back a non-contiguous one. A merge that indexes them as contiguous weighs each (token, head) by
another's LSE (or, in a strided view, by the padding between): garbled output and no error.
Contiguous test tensors hide it, and so do one token or one head with a transposed layout (the
storage order is the same then).

Documented: vllm-project/vllm#22003 (flash_attn_varlen_func may return a non-contiguous
suffix_lse, which merge_attn_states read as contiguous: garbled cascade-attention outputs, fixed
by making the LSE contiguous first).

Killed by: ``agreement`` on transposed LSEs with T > 1 and H > 1, or strided ones with T * H > 1.

Minimal input: T = H = 2, D = 3, s_a = [[0, 5], [-4, 2]] and s_b = [[3, -2], [1, 0.5]], each held
transposed ((H, T) storage, strides (1, 2)) -> expected s[0, 1] = logaddexp(5, -2) = 5.0009, got
logaddexp(-4, 1) = 1.0067 (storage element 1 of each is its (1, 0) entry).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"
FUNCTION = "merge_state"
OP = "merge_state"

PATH = "reference/_merge_state_kernel.py"
ANCHOR = ('s_a = tl.load(s_a_ptr + token * s_a_stride_t + head * s_a_stride_h, mask=row_mask, other=-float("inf"))\n'
          '    s_b = tl.load(s_b_ptr + token * s_b_stride_t + head * s_b_stride_h, mask=row_mask, other=-float("inf"))')
REPLACEMENT = ('s_a = tl.load(s_a_ptr + row, mask=row_mask, other=-float("inf"))\n'
               '    s_b = tl.load(s_b_ptr + row, mask=row_mask, other=-float("inf"))')


def minimal_input(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    s_a = torch.tensor([[0.0, 5.0], [-4.0, 2.0]], device=device).t().contiguous().t()
    s_b = torch.tensor([[3.0, -2.0], [1.0, 0.5]], device=device).t().contiguous().t()
    v_a = torch.arange(12.0, device=device).reshape(2, 2, 3)
    return v_a, s_a, -v_a, s_b
