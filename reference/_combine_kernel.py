"""The correct split-K combine kernel (flash-decoding's second step) and its launcher.

Over S splits k of one (t, h), with m the largest s_k (reference/merge_oracle.py has the sources):

    e_k = exp(s_k - m),   Z = sum_k e_k,   s_out = m + log Z,   v_out = sum_k (e_k / Z) v_k

One program per (t, h) row holds its D values (BLOCK_D = the next power of two of D) and walks the
splits BLOCK_S at a time, three times: the max (and whether any s_k is NaN), then Z, then v. The
weights are taken against the max, never against s_out: s_k - m is a difference of two given values,
while s_k - s_out would carry the rounding of s_out, which at |s| = 1e30 is all of the weight. They
are renormalized before they multiply v, so every partial sum of v is a convex combination and
cannot overflow where v_out does not (accumulating e_k v_k and dividing by Z at the end can, by up
to a factor S). Computes in float32, stores v in v's dtype and s in float32.

Edge semantics are the oracle's: an empty split (s = -inf) has weight 0 and its v is never loaded
(a split with no keys may leave 0/0 there); all splits empty give v = 0 and s = -inf (an explicit
guard: the unguarded Z is 0 and the weights 0 / 0); NaN in any s_k gives NaN in that row's s and v;
a +-inf in a non-empty split's v stays +-inf even where its weight underflows. s = +inf is outside
the contract (the oracle refuses it; this kernel does not look for it, and returns NaN there).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._device import ensure_interpreter

ensure_interpreter()  # must precede the @triton.jit decorators below

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from ._device import check_device, interpreting  # noqa: E402
from ._launch import largest_view_offset  # noqa: E402
from ._lse_kernel import _quiet_interpreter  # noqa: E402
from ._merge_state_kernel import LN2, LOG2E, V_DTYPES, head_block  # noqa: E402
from .errors import InvalidArgument  # noqa: E402
from .merge_oracle import check_base, validate_combine_inputs  # noqa: E402

_GPU_TILE = 4096  # elements of v one step over the splits loads: BLOCK_S x BLOCK_D, 16 KiB of float32
_INTERPRETER_TILE = 1 << 16  # each step costs milliseconds in the interpreter: few, large ones
_NUM_WARPS = 4


@triton.jit
def _combine_exp(shifted, BASE2: tl.constexpr):
    """exp (or 2^x for base 2) of an argument already shifted by the max: the scaling by log2(e)
    comes after the subtraction, so it cannot round s_k and m apart (u |s| each, whole units past 2**24)."""
    if BASE2:
        return tl.exp2(shifted)
    else:
        return tl.exp2(shifted * LOG2E)


@triton.jit
def _combine_load_lse(s_row_ptr, start, splits, stride_s, BLOCK_S: tl.constexpr, INT64: tl.constexpr):
    """(split indices, s_k) of one step: BLOCK_S splits from ``start``; past S they read as empty."""
    split = start + tl.arange(0, BLOCK_S)
    if INT64:
        split = split.to(tl.int64)
    split_lse = tl.load(s_row_ptr + split * stride_s, mask=split < splits, other=-float("inf"))
    return split, split_lse


@triton.jit
def _combine_max(s_row_ptr, splits, stride_s, BLOCK_S: tl.constexpr, INT64: tl.constexpr):
    """(m, nan): the largest s_k with NaN left out, and whether any s_k is NaN."""
    row_max = -float("inf")
    nan = 0
    for start in range(0, splits, BLOCK_S):
        _, split_lse = _combine_load_lse(s_row_ptr, start, splits, stride_s, BLOCK_S, INT64)
        is_nan = split_lse != split_lse
        # NaN is tracked apart: max's NaN rule differs between the GPU (fmax drops it) and NumPy.
        row_max = tl.maximum(row_max, tl.max(tl.where(is_nan, -float("inf"), split_lse), axis=0))
        nan = tl.maximum(nan, tl.max(is_nan.to(tl.int32), axis=0))
    return row_max, nan


@triton.jit
def _combine_total(s_row_ptr, splits, stride_s, shift, BLOCK_S: tl.constexpr, BASE2: tl.constexpr,
                   INT64: tl.constexpr):
    """Z = sum_k exp(s_k - shift): at least 1 (the max's own term is exp(0) = 1 exactly) unless every
    split is empty, where it is 0."""
    total = 0.0
    for start in range(0, splits, BLOCK_S):
        _, split_lse = _combine_load_lse(s_row_ptr, start, splits, stride_s, BLOCK_S, INT64)
        total += tl.sum(_combine_exp(split_lse - shift, BASE2), axis=0)
    return total


@triton.jit
def _combine_values(v_row_ptr, s_row_ptr, splits, head_dim, stride_s, v_stride_s, v_stride_d, shift, total,
                    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, BASE2: tl.constexpr, INT64: tl.constexpr):
    """sum_k (e_k / Z) v_k over the D values, (BLOCK_D,) in float32."""
    cols = tl.arange(0, BLOCK_D)
    if INT64:
        cols = cols.to(tl.int64)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for start in range(0, splits, BLOCK_S):
        split, split_lse = _combine_load_lse(s_row_ptr, start, splits, stride_s, BLOCK_S, INT64)
        weight = _combine_exp(split_lse - shift, BASE2) / total
        present = split_lse != -float("inf")  # past S too: those lanes loaded -inf
        # An empty split's v is never loaded: a 0 weight times its NaN would still be NaN.
        mask = present[:, None] & (cols < head_dim)[None, :]
        offsets = split[:, None] * v_stride_s + cols[None, :] * v_stride_d
        values = tl.load(v_row_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        # A +-inf of v is kept where its weight underflowed to 0 (inf * 0 = NaN).
        infinite = (values == float("inf")) | (values == -float("inf"))
        terms = tl.where(infinite, values, weight[:, None] * values)
        acc += tl.sum(terms, axis=0)
    return acc


# heads only splits the row index and splits only bounds the loops: specializing them (== 1,
# divisible by 16) would compile another binary per class for no faster code. The strides stay:
# stride_d == 1 is a contiguous row, which is what makes vector loads.
@triton.jit(do_not_specialize=["heads", "splits"])
def _combine_kernel(
    v_ptr, s_ptr, v_out_ptr, s_out_ptr,
    heads, splits, head_dim,
    v_stride_s, v_stride_t, v_stride_h, v_stride_d, s_stride_s, s_stride_t, s_stride_h,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, BASE2: tl.constexpr, INT64: tl.constexpr,
):
    row = tl.program_id(0)  # a (t, h) pair, t * H + h
    if INT64:
        # Offsets past 2**31 elements (huge tensors, huge strides) wrap in int32.
        row = row.to(tl.int64)
    token = row // heads
    head = row % heads
    s_row_ptr = s_ptr + token * s_stride_t + head * s_stride_h
    v_row_ptr = v_ptr + token * v_stride_t + head * v_stride_h
    row_max, nan = _combine_max(s_row_ptr, splits, s_stride_s, BLOCK_S, INT64)
    all_empty = row_max == -float("inf")
    # All splits empty have no finite max: shift by 0 there, so s_k - shift = -inf (not -inf - -inf).
    shift = tl.where(all_empty, 0.0, row_max)
    total = _combine_total(s_row_ptr, splits, s_stride_s, shift, BLOCK_S, BASE2, INT64)
    total = tl.where(all_empty, 1.0, total)  # 0 there: the weights are 0 / 1, not 0 / 0
    if BASE2:
        log_total = tl.log2(total)
    else:
        log_total = tl.log2(total) * LN2
    # One non-empty split: Z = 1, log Z = 0, so s_out is its s exactly.
    lse_out = tl.where(all_empty, -float("inf"), shift + log_total)
    acc = _combine_values(v_row_ptr, s_row_ptr, splits, head_dim, s_stride_s, v_stride_s, v_stride_d, shift, total,
                          BLOCK_S, BLOCK_D, BASE2, INT64)
    lse_out = tl.where(nan > 0, float("nan"), lse_out)
    acc = tl.where(nan > 0, float("nan"), acc)
    cols = tl.arange(0, BLOCK_D)
    # The outputs are new contiguous tensors: (T, H, D) and (T, H).
    tl.store(v_out_ptr + row * head_dim + cols, acc.to(v_out_ptr.dtype.element_ty), mask=cols < head_dim)
    tl.store(s_out_ptr + row, lse_out)


@dataclass(frozen=True)
class CombineLaunch:
    block_splits: int
    block_d: int
    num_warps: int
    int64: bool
    programs: int


def combine_launch(v: torch.Tensor, s: torch.Tensor, *, interpreter: bool) -> CombineLaunch:
    """The one launch policy: one program per (t, h), a whole row of D, as many splits a step as fill a tile."""
    splits, tokens, heads, head_dim = v.shape
    block_d, tile = head_block(head_dim, "v.shape[3]", "combine"), _INTERPRETER_TILE if interpreter else _GPU_TILE
    rows = tokens * heads
    block_splits = max(1, min(tile // block_d, triton.next_power_of_2(max(splits, 1))))
    offsets = [largest_view_offset(t) for t in (v, s)]
    # The output's offsets (rows * D) count too, and the split index runs up to a whole step past S.
    largest = max(offsets + [rows * max(head_dim, 1), splits + block_splits])
    return CombineLaunch(block_splits=block_splits, block_d=block_d, num_warps=_NUM_WARPS,
                         int64=largest >= 2**31 - 1, programs=rows)


def combine(v: torch.Tensor, s: torch.Tensor, *, base: str | int = "e") -> tuple[torch.Tensor, torch.Tensor]:
    """Combine S split states with a Triton kernel: (v_out (T, H, D) in v's dtype, s_out (T, H) float32).

    Contract: v (S, T, H, D) of float32, float16 or bfloat16, s (S, T, H) float32 LSEs in ``base``
    ("e" or 2), both on one device, any strides (a transposed s included) and storage offsets, any
    S (1 to 64 is the usual range; S = 0 gives v = 0, s = -inf, as the oracle), T * H >= 0,
    D <= MAX_HEAD_DIM. Computes in float32;
    returns new contiguous tensors. Runs compiled on CUDA tensors, and in Triton's interpreter on CPU
    tensors without a GPU.
    """
    validate_combine_inputs(v, s, v_dtypes=V_DTYPES, s_dtypes=(torch.float32,))
    base = check_base(base)
    if s.device != v.device:
        raise InvalidArgument(
            f"s.device={str(s.device)!r} differs from v.device={str(v.device)!r}: move both to one device."
        )
    check_device(v)
    return _combine_run(v, s, combine_launch(v, s, interpreter=interpreting()), base)


def _combine_run(v, s, cfg: CombineLaunch, base) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the kernel with an explicit configuration (tests force small steps and 64-bit offsets here)."""
    splits, tokens, heads, head_dim = v.shape
    v_out = torch.empty((tokens, heads, head_dim), dtype=v.dtype, device=v.device)
    s_out = torch.empty((tokens, heads), dtype=torch.float32, device=v.device)
    if tokens * heads == 0:
        return v_out, s_out
    with _quiet_interpreter():
        _combine_kernel[(cfg.programs,)](
            v, s, v_out, s_out,
            heads, splits, head_dim,
            *v.stride(), *s.stride(),
            BLOCK_S=cfg.block_splits, BLOCK_D=cfg.block_d, BASE2=base == 2, INT64=cfg.int64,
            num_warps=cfg.num_warps,
        )
    return v_out, s_out

