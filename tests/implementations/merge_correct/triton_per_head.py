"""A Triton merge in the style of the inference engines' kernels: one program per (token, head),
the two LSEs loaded as scalars, the max subtracted, the weights normalized by their sum. Its guard
for two empty states sets the max to 0 first (so -inf - max is -inf, not NaN). Natural-log LSEs;
``BASE2`` for base-2 ones (``merge_state_base2``)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _merge_per_head(v_out, s_out, v_a, s_a, v_b, s_b, heads, dim, sv_t, sv_h, sa_t, sa_h, sb_t, sb_h,
                    va_t, va_h, vb_t, vb_h, BLOCK: tl.constexpr, BASE2: tl.constexpr):
    token = tl.program_id(0)
    head = tl.program_id(1)
    a = tl.load(s_a + token * sa_t + head * sa_h)
    b = tl.load(s_b + token * sb_t + head * sb_h)
    top = tl.maximum(a, b)
    top = tl.where(top == -float("inf"), 0.0, top)
    if BASE2:
        e_a = tl.exp2(a - top)
        e_b = tl.exp2(b - top)
    else:
        e_a = tl.exp(a - top)
        e_b = tl.exp(b - top)
    total = e_a + e_b
    if BASE2:
        s = top + tl.log2(total)
    else:
        s = top + tl.log(total)
    w_a = tl.where(total > 0, e_a / total, 0.0)
    w_b = tl.where(total > 0, e_b / total, 0.0)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    x_a = tl.load(v_a + token * va_t + head * va_h + cols, mask=mask & (w_a > 0), other=0.0).to(tl.float32)
    x_b = tl.load(v_b + token * vb_t + head * vb_h + cols, mask=mask & (w_b > 0), other=0.0).to(tl.float32)
    tl.store(v_out + token * sv_t + head * sv_h + cols, x_a * w_a + x_b * w_b, mask=mask)
    tl.store(s_out + token * heads + head, s)


def _merge(v_a, s_a, v_b, s_b, base2):
    tokens, heads, dim = v_a.shape
    v_a, v_b = v_a.contiguous() if v_a.stride(2) != 1 else v_a, v_b.contiguous() if v_b.stride(2) != 1 else v_b
    v = torch.empty((tokens, heads, dim), dtype=v_a.dtype, device=v_a.device)
    s = torch.empty((tokens, heads), dtype=torch.float32, device=v_a.device)
    if tokens * heads:
        _merge_per_head[(tokens, heads)](v, s, v_a, s_a, v_b, s_b, heads, dim, v.stride(0), v.stride(1),
                                         s_a.stride(0), s_a.stride(1), s_b.stride(0), s_b.stride(1),
                                         v_a.stride(0), v_a.stride(1), v_b.stride(0), v_b.stride(1),
                                         BLOCK=triton.next_power_of_2(dim), BASE2=base2)
    return v, s


def merge_state(v_a, s_a, v_b, s_b):
    return _merge(v_a, s_a, v_b, s_b, False)


def merge_state_base2(v_a, s_a, v_b, s_b):
    """Base-2 LSEs in and out (``--lse-base 2``): FlashInfer's convention."""
    return _merge(v_a, s_a, v_b, s_b, True)
