"""Pure PyTorch, streaming over column chunks with online rescaling (no Triton, no torch.logsumexp).

    per chunk c:  m_c = max over the chunk,  S_c = sum exp(x - m_c)
    running:      m = max(m, m_c),  S = S * exp(m_old - m) + S_c * exp(m_c - m)
    out = m + log(S)

The memory-bounded eager form of chunked cross-entropy losses (e.g. chunked/"cut" CE
implementations that never materialize a full (M, N) float32 copy of half logits): each chunk of
CHUNK columns is upcast to the accumulation dtype, reduced to a (max, sum) pair per row, and
folded into the running pair with eager tensor ops. Only a (M, CHUNK) temporary exists at a time.

Edge cases are explicit torch.where selects, not torch.logsumexp: NaN entries are kept out of
the max (amax propagates NaN) and flagged; the chunk shift is the chunk max when finite and 0
otherwise; the merge weight is 1 when two maxima are equal (no inf - inf) and exp(-inf) = 0 when
one side is empty. Result: NaN, else the max when infinite, else max + log(sum).

Output: float32 for float16, bfloat16, float32 (accumulated in float32); float64 for float64.
Works on any device and any strides (torch indexes in 64-bit).
"""

from __future__ import annotations

import math

import torch

CHUNK = 4096


def _merge(max_a: torch.Tensor, sum_a: torch.Tensor, max_b: torch.Tensor, sum_b: torch.Tensor):
    new_max = torch.maximum(max_a, max_b)
    one = torch.ones_like(sum_a)
    weight_a = torch.where(max_a == new_max, one, torch.exp(max_a - new_max))
    weight_b = torch.where(max_b == new_max, one, torch.exp(max_b - new_max))
    return new_max, sum_a * weight_a + sum_b * weight_b


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp of a 2-D float tensor; float32 output (float64 for float64 input)."""
    if x.dim() != 2:
        raise ValueError(f"x.shape={tuple(x.shape)}; expected a 2-D (M, N) tensor.")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x.dtype={x.dtype}; expected float16, bfloat16, float32 or float64.")
    rows, cols = x.shape
    acc_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    run_max = torch.full((rows,), -math.inf, dtype=acc_dtype, device=x.device)
    run_sum = torch.zeros(rows, dtype=acc_dtype, device=x.device)
    saw_nan = torch.zeros(rows, dtype=torch.bool, device=x.device)
    for start in range(0, cols, CHUNK):
        chunk = x[:, start:start + CHUNK].to(acc_dtype)  # a new tensor: x itself is never written
        is_nan = torch.isnan(chunk)
        saw_nan |= is_nan.any(dim=1)
        chunk = chunk.masked_fill(is_nan, -math.inf)
        chunk_max = chunk.amax(dim=1)
        shift = torch.where(torch.isfinite(chunk_max), chunk_max, torch.zeros_like(chunk_max))
        chunk_sum = torch.exp(chunk - shift[:, None]).sum(dim=1)
        run_max, run_sum = _merge(run_max, run_sum, chunk_max, chunk_sum)
    result = torch.where(torch.isinf(run_max), run_max, run_max + torch.log(run_sum))
    return torch.where(saw_nan, torch.full_like(result, math.nan), result)
