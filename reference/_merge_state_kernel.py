"""The correct, fast attention-state merge kernel and its launcher.

    s = m + log(exp(s_a - m) + exp(s_b - m)),   v = w_a v_a + w_b v_b,   w_x = exp(s_x - m) / (that sum)

with m = max(s_a, s_b) (reference/merge_oracle.py has the formula's sources and its float64 form).
The weights are taken against the max, never against the merged s: s_x - m is a difference of two
given values (one of them is exactly 0), while s_x - s would carry the rounding of s, which at |s| =
1e30 is all of the weight. Each program owns BLOCK_R (t, h) rows of D values (BLOCK_D = the next power
of two of D), computes in float32 and stores v in v_a's dtype and s in float32. Edge semantics are the
oracle's: an empty state (s = -inf) is ignored, v included; two empty states give v = 0 and s = -inf
(an explicit guard: the unguarded formula is 0 / 0); NaN in s_a or s_b gives NaN in that row's s and
v; a +-inf in a non-empty state's v stays +-inf. s = +inf is outside the contract (the oracle
refuses it; this kernel does not look for it, and returns NaN there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._device import ensure_interpreter

ensure_interpreter()  # must precede the @triton.jit decorators below

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from ._device import check_device, interpreting  # noqa: E402
from ._launch import largest_view_offset  # noqa: E402
from ._lse_kernel import _quiet_interpreter  # noqa: E402
from .errors import InvalidArgument  # noqa: E402
from .merge_oracle import check_base, validate_merge_inputs  # noqa: E402

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
LN2: tl.constexpr = tl.constexpr(0.6931471805599453)

V_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_HEAD_DIM = 1 << 14  # one program holds a whole row of D values in registers
_GPU_TILE = 2048  # elements of v a program merges: 8 KiB of float32 per state, as many rows as fit
_INTERPRETER_TILE = 1 << 16  # each program costs milliseconds in the interpreter: few, large ones
_NUM_WARPS = 4


@triton.jit
def _merge_weights(s_a, s_b, BASE2: tl.constexpr):
    """(w_a, w_b, s, nan) per row, in float32, with the edge rules of the module docstring; ``nan``
    marks the rows whose s_a or s_b is NaN (their v must become NaN too)."""
    empty_a = s_a == -float("inf")
    empty_b = s_b == -float("inf")
    both_empty = empty_a & empty_b
    # Two empty states have no finite max: shift by 0 there, so t = -inf - 0 (not -inf - -inf = NaN).
    # With the guard on total below, no NaN arises from empty states at all (as in _lse_combine);
    # _merge_weighted's empty mask and the guard on s are what the outputs rely on.
    shift = tl.where(both_empty, 0.0, tl.maximum(s_a, s_b))
    # Subtract before scaling by log2(e): s_x * log2(e) - m * log2(e) would round both products, an
    # error of u |s| in each exponent (whole units past |s| = 2**24).
    t_a = s_a - shift
    t_b = s_b - shift
    if BASE2:
        e_a = tl.exp2(t_a)
        e_b = tl.exp2(t_b)
    else:
        e_a = tl.exp2(t_a * LOG2E)
        e_b = tl.exp2(t_b * LOG2E)
    total = e_a + e_b  # in [1, 2]: the max's own term is exp(0) = 1 exactly
    total = tl.where(both_empty, 1.0, total)  # 0 + 0 there: w = 0 / 1, not 0 / 0
    if BASE2:
        log_total = tl.log2(total)
    else:
        log_total = tl.log2(total) * LN2
    # One empty state: total = 1, log_total = 0, so s is the other state's s exactly.
    s = tl.where(both_empty, -float("inf"), shift + log_total)
    nan = (s_a != s_a) | (s_b != s_b)
    s = tl.where(nan, float("nan"), s)
    return e_a / total, e_b / total, s, nan


@triton.jit
def _merge_weighted(v, w, s):
    """w * v per element, (BLOCK_R, BLOCK_D): 0 for an empty state whatever v holds (NaN, inf: a
    split with no keys may leave 0/0), and a +-inf of v kept where w underflowed to 0 (inf * 0 = NaN)."""
    infinite = (v == float("inf")) | (v == -float("inf"))
    term = tl.where(infinite, v, w[:, None] * v)
    return tl.where((s == -float("inf"))[:, None], 0.0, term)


@triton.jit
def _merge_load_v(ptr, token, head, cols, stride_t, stride_h, stride_d, mask):
    offsets = token[:, None] * stride_t + head[:, None] * stride_h + cols[None, :] * stride_d
    return tl.load(ptr + offsets, mask=mask, other=0.0).to(tl.float32)


# rows and heads only index and bound the rows: specializing them (== 1, divisible by 16) would
# compile another binary per class for no faster code. The strides stay: stride_d == 1 is a
# contiguous row, which is what makes vector loads.
@triton.jit(do_not_specialize=["rows", "heads"])
def _merge_state_kernel(
    v_a_ptr, s_a_ptr, v_b_ptr, s_b_ptr, v_out_ptr, s_out_ptr,
    rows, heads, head_dim,
    v_a_stride_t, v_a_stride_h, v_a_stride_d, v_b_stride_t, v_b_stride_h, v_b_stride_d,
    s_a_stride_t, s_a_stride_h, s_b_stride_t, s_b_stride_h,
    BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, BASE2: tl.constexpr, INT64: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    if INT64:
        # Offsets past 2**31 elements (huge tensors, huge strides) wrap in int32.
        pid = pid.to(tl.int64)
        cols = cols.to(tl.int64)
    row = pid * BLOCK_R + tl.arange(0, BLOCK_R)  # a (t, h) pair, t * H + h
    row_mask = row < rows
    token = row // heads
    head = row % heads
    # Masked rows read two empty states: they take the guarded path, and are never stored.
    s_a = tl.load(s_a_ptr + token * s_a_stride_t + head * s_a_stride_h, mask=row_mask, other=-float("inf"))
    s_b = tl.load(s_b_ptr + token * s_b_stride_t + head * s_b_stride_h, mask=row_mask, other=-float("inf"))
    w_a, w_b, s, nan = _merge_weights(s_a, s_b, BASE2)
    mask = row_mask[:, None] & (cols < head_dim)[None, :]
    v_a = _merge_load_v(v_a_ptr, token, head, cols, v_a_stride_t, v_a_stride_h, v_a_stride_d, mask)
    v_b = _merge_load_v(v_b_ptr, token, head, cols, v_b_stride_t, v_b_stride_h, v_b_stride_d, mask)
    v = _merge_weighted(v_a, w_a, s_a) + _merge_weighted(v_b, w_b, s_b)
    v = tl.where(nan[:, None], float("nan"), v)
    # The outputs are new contiguous tensors: (T, H, D) and (T, H).
    tl.store(v_out_ptr + row[:, None] * head_dim + cols[None, :], v.to(v_out_ptr.dtype.element_ty), mask=mask)
    tl.store(s_out_ptr + row, s, mask=row_mask)


@dataclass(frozen=True)
class MergeLaunch:
    block_rows: int
    block_d: int
    num_warps: int
    int64: bool
    programs: int


def head_block(head_dim: int, where: str, verb: str) -> int:
    """BLOCK_D of a kernel that holds a whole row of D values per program row; InvalidArgument past
    MAX_HEAD_DIM (``where``: the dim's name, ``verb``: what the kernel does)."""
    if head_dim > MAX_HEAD_DIM:
        raise InvalidArgument(
            f"{where}={head_dim} exceeds MAX_HEAD_DIM={MAX_HEAD_DIM}: one program holds a whole row of D "
            f"values (BLOCK_D is the next power of two of D); {verb} the head dim in slices of at most that."
        )
    return triton.next_power_of_2(max(head_dim, 1))


def merge_launch(v_a, s_a, v_b, s_b, *, interpreter: bool) -> MergeLaunch:
    """The one launch policy: a whole row of D per program row, as many rows as fill a tile."""
    tokens, heads, head_dim = v_a.shape
    block_d, tile = head_block(head_dim, "v_a.shape[2]", "merge"), _INTERPRETER_TILE if interpreter else _GPU_TILE
    rows = tokens * heads
    block_rows = max(1, min(tile // block_d, triton.next_power_of_2(max(rows, 1))))
    offsets = [largest_view_offset(t) for t in (v_a, s_a, v_b, s_b)]
    # The row index itself and the output's offsets (rows * D) count too.
    largest = max(offsets + [rows * max(head_dim, 1), math.ceil(rows / block_rows) * block_rows])
    return MergeLaunch(block_rows=block_rows, block_d=block_d, num_warps=_NUM_WARPS,
                       int64=largest >= 2**31 - 1, programs=math.ceil(rows / block_rows))


def merge_state(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor, *,
                base: str | int = "e") -> tuple[torch.Tensor, torch.Tensor]:
    """Merge two attention states with a Triton kernel: (v (T, H, D) in v_a's dtype, s (T, H) float32).

    Contract: v_a, v_b (T, H, D) of float32, float16 or bfloat16 (the same dtype), s_a, s_b (T, H)
    float32 LSEs in ``base`` ("e" or 2), all on one device, any strides (a transposed s included) and
    storage offsets, T * H >= 0, D <= MAX_HEAD_DIM. Computes in float32; returns new contiguous
    tensors. Runs compiled on CUDA tensors, and in Triton's interpreter on CPU tensors without a GPU.
    """
    validate_merge_inputs(v_a, s_a, v_b, s_b, v_dtypes=V_DTYPES, s_dtypes=(torch.float32,))
    base = check_base(base)
    for name, tensor in (("s_a", s_a), ("v_b", v_b), ("s_b", s_b)):
        if tensor.device != v_a.device:
            raise InvalidArgument(
                f"{name}.device={str(tensor.device)!r} differs from v_a.device={str(v_a.device)!r}: "
                "move all four states to one device."
            )
    check_device(v_a)
    return _merge_run(v_a, s_a, v_b, s_b, merge_launch(v_a, s_a, v_b, s_b, interpreter=interpreting()), base)


def _merge_run(v_a, s_a, v_b, s_b, cfg: MergeLaunch, base) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the kernel with an explicit configuration (tests force small tiles and 64-bit offsets here)."""
    tokens, heads, head_dim = v_a.shape
    v_out = torch.empty((tokens, heads, head_dim), dtype=v_a.dtype, device=v_a.device)
    s_out = torch.empty((tokens, heads), dtype=torch.float32, device=v_a.device)
    if tokens * heads == 0:
        return v_out, s_out
    with _quiet_interpreter():
        _merge_state_kernel[(cfg.programs,)](
            v_a, s_a, v_b, s_b, v_out, s_out,
            tokens * heads, heads, head_dim,
            *v_a.stride(), *v_b.stride(), *s_a.stride(), *s_b.stride(),
            BLOCK_R=cfg.block_rows, BLOCK_D=cfg.block_d, BASE2=base == 2, INT64=cfg.int64,
            num_warps=cfg.num_warps,
        )
    return v_out, s_out
