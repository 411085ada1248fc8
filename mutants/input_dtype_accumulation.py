"""Mutant: the row's running sum is kept in the input dtype (float16 or bfloat16), not float32.

Patch: one line added to ``_lse_kernel`` (reference/_lse_kernel.py) after the last tile: the
running sum makes a round trip through the input's dtype
(``run_sum = run_sum.to(x_ptr.dtype.element_ty).to(dtype)``) before it is finished or stored as a
split's partial, so it keeps only 11 (float16) or 8 (bfloat16) significant bits. Float32 and
float64 inputs are unaffected (the round trip is exact).

Pitfall: declaring accumulators and buffers "like the input" is the natural way to write
dtype-generic code (``tl.zeros(..., x_ptr.dtype.element_ty)``, ``torch.empty_like(x)``), and with
16-bit inputs it rounds the sum: an error of up to 2**-12 (float16) or 2**-9 (bfloat16) in the
result, thousands of times the float32 tolerance, and a float16 sum overflows at 65504 (a row of
65536 zeros sums to +inf). Mixed-precision practice is to read 16-bit data and keep every sum in
float32. (Triton's exp and log take float32 or float64 only, so in a kernel the rounding needs a
cast, as here; the reference's sum of a tile never leaves float32, so one edit can round it only
once per row or partial, not after every tile.)

Documented: Micikevicius et al. (2018), "Mixed Precision Training", ICLR (accumulate float16
products and sums into float32); Blanchard, Higham and Higham (2021), section 3 (the sum's rounding
error enters the result directly).

Killed by: ``agreement`` on float16 and bfloat16 inputs with two or more columns;
``shift_invariance``, ``permutation_invariance`` and ``fresh_values`` catch it too (the rounding
error of the sum differs between the two inputs of a pair by more than the float32 tolerance).

Minimal input: ``[[0.0, -0.5]]`` in float16 -> expected log(1 + e^-0.5) = 0.474077, got
0.474024 (the sum 1.606531 rounded to the float16 1.606445).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "agreement"

PATH = "reference/_lse_kernel.py"
ANCHOR = (
    "BLOCK_N, INT64, True)\n"
    "    if PARTIALS:"
)
REPLACEMENT = (
    "BLOCK_N, INT64, True)\n"
    "    run_sum = run_sum.to(x_ptr.dtype.element_ty).to(dtype)\n"
    "    if PARTIALS:"
)


def minimal_input(device: torch.device) -> torch.Tensor:
    return torch.tensor([[0.0, -0.5]], dtype=torch.float16, device=device)
