"""Merging partial (max, sum) pairs: the helpers the LSE kernel shares, and the split-row combine kernel.

A partial is (m, s) with s = sum exp(x - shift(m)) over the elements it covers, where shift(m) is m
when finite and 0 otherwise. An all -inf range is (-inf, 0); a range holding +inf is (+inf, inf);
a range holding NaN has s = NaN. The rules below merge partials without ever evaluating
-inf - (-inf) or inf - inf, which would turn a valid row into NaN.
"""

from __future__ import annotations

from ._device import ensure_interpreter

ensure_interpreter()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _shift(m):
    """The value subtracted before exp: m itself when finite, else 0 (no finite shift exists)."""
    finite = (m != float("inf")) & (m != -float("inf"))
    return tl.where(finite, m, 0.0)


@triton.jit
def _rescale(old_max, new_max):
    """exp(old_max - new_max), defined as 1 when both are the same infinity."""
    return tl.where(old_max == new_max, 1.0, tl.exp(old_max - new_max))


@triton.jit
def _finish(row_max, row_sum):
    """m + log(s), with the edge rules: NaN seen -> NaN; m = +-inf -> m."""
    infinite = (row_max == float("inf")) | (row_max == -float("inf"))
    result = tl.where(infinite, row_max, row_max + tl.log(row_sum))
    return tl.where(row_sum != row_sum, float("nan"), result)


# The split count is a runtime argument, not a constexpr: each value was another compile, and
# the BLOCK_S-wide tile (its next power of two) already fixes the code. Neither it nor M is
# specialized (== 1, divisible by 16): they only bound the lanes and index the partials.
@triton.jit(do_not_specialize=["M", "num_splits"])
def _lse_combine_kernel(part_max_ptr, part_sum_ptr, out_ptr, M, num_splits,
                        BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    splits = tl.arange(0, BLOCK_S)
    mask = (rows < M)[:, None] & (splits < num_splits)[None, :]
    offsets = rows[:, None] * num_splits + splits[None, :]
    # Padding partials are (-inf, 0): the identity of the merge.
    part_max = tl.load(part_max_ptr + offsets, mask=mask, other=-float("inf"))
    part_sum = tl.load(part_sum_ptr + offsets, mask=mask, other=0.0)
    row_max = tl.max(part_max, axis=1)
    row_sum = tl.sum(part_sum * _rescale(part_max, row_max[:, None]), axis=1)
    tl.store(out_ptr + rows, _finish(row_max, row_sum), mask=rows < M)
