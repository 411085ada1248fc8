"""The float64 oracle of the attention-state merge: what "right" means for merge and combine kernels.

A state is a partial attention output v (per token t and head h, D values) and the log-sum-exp s of
the scores behind it. Two states over disjoint sets of keys merge into the state over their union
(the rescaling of FlashAttention's split-KV combine, Dao et al. 2023 "Flash-Decoding"; the
merge_state operator of FlashInfer, Ye et al. 2025, and of vLLM's merge_attn_states):

    s = logaddexp(s_a, s_b),   v = exp(s_a - s) * v_a + exp(s_b - s) * v_b

and, over S splits (k = 1..S),  s_out = log(sum_k exp(s_k)),  v_out = sum_k exp(s_k - s_out) * v_k.
With ``base=2`` (FlashInfer and TRT-LLM return base-2 LSEs) every exp is 2^x and every log is log2.

It is evaluated in the form of Blanchard, Higham and Higham (2021, IMA J. Numer. Anal. 41(4)):
with m the largest s_k, t_k = s_k - m <= 0,

    s_out = m + log1p(sum over the other splits of exp(t_k)),   w_k = exp(t_k) / (1 + that sum)

so for a merge s = m + log1p(exp(-|s_a - s_b|)). Why not the formula as written: exp(s_k - s_out)
needs s_out, which is rounded, and at |s| = 1e30 a rounding of s_out is 1e14 in float64 and all of
the weight (s_a = s_b = 1e30 would give w = 1 for both, v_a + v_b instead of their mean); t_k is the
difference of two given values, so each weight is exact to a few ulps at any magnitude and the
weights sum to 1. log1p keeps a split far below the max (|s_a - s_b| > 37) in s, where log(1 + x)
would lose it. The weights then multiply the inputs' own values (every dtype converts exactly). The
result is exact to a few float64 ulps of sum_k w_k |v_k|, plus float64's underflow of a weight below
e^-745 (2^-1074 |v_k| at most, far below a float32 result's smallest step).

Edge semantics, per (t, h):
* an empty state (s = -inf: no keys) has weight exactly 0 and its v is ignored, whatever it holds
  (a split with no keys may leave 0/0 there): one empty state is the identity (the other state comes
  back exactly), two (or all S) empty states give v = 0, s = -inf; S = 0 splits are all empty;
* NaN in any s gives NaN in that (t, h)'s s and in all D of its v;
* a non-empty state's weight is positive, so a +-inf or NaN in its v reaches that element of the
  result as IEEE addition has it (inf + -inf = NaN), even where the weight underflows float64;
* s = +inf is outside the contract (there are no finite weights: +inf - +inf): the oracle raises
  :class:`InvalidArgument` naming the first such entry. Kernels give it no meaning either.

Inputs: v of float16, bfloat16, float32 or float64 (both states the same dtype), s of a floating
dtype (the kernels' contract is float32; float64 is accepted here for testing the oracle itself).
Results are float64 tensors on the CPU.
"""

from __future__ import annotations

import math

import torch

from .errors import InvalidArgument
from .oracle import SUPPORTED_DTYPES

BASES = ("e", 2)
INF = math.inf


def check_base(base: object) -> str | int:
    """``base`` itself if it is "e" or 2, else :class:`InvalidArgument` with both choices named."""
    if isinstance(base, (str, int, float)) and not isinstance(base, bool) and base in BASES:
        return "e" if base == "e" else 2
    raise InvalidArgument(
        f"base={base!r}; expected \"e\" for natural-log LSEs (vLLM, FlashAttention) or 2 for base-2 LSEs "
        "(FlashInfer, TRT-LLM)."
    )


def _check_tensor(value: object, name: str, dims: str, dtypes) -> torch.Tensor:
    """A tensor of rank len(dims.split(', ')) and a dtype in ``dtypes``, or InvalidArgument naming it."""
    rank = len(dims.split(", "))
    if not isinstance(value, torch.Tensor):
        raise InvalidArgument(f"{name}={type(value).__name__} object; expected a {rank}-D ({dims}) torch.Tensor.")
    if value.dim() != rank:
        raise InvalidArgument(
            f"{name}.shape={tuple(value.shape)}; expected a {rank}-D ({dims}) tensor "
            "(T tokens, H heads, D values per head; S splits for combine)."
        )
    if value.dtype not in dtypes:
        names = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise InvalidArgument(f"{name}.dtype={value.dtype}; supported dtypes are {names}: cast with {name}.float().")
    return value


def _check_lse_shape(lses: torch.Tensor, name: str, values: torch.Tensor, values_name: str) -> None:
    expected = tuple(values.shape[:-1])
    if tuple(lses.shape) != expected:
        raise InvalidArgument(
            f"{name}.shape={tuple(lses.shape)}; expected {expected}, the leading dims of "
            f"{values_name}.shape={tuple(values.shape)}: one LSE per row of D values."
        )


def validate_merge_inputs(v_a, s_a, v_b, s_b, *, v_dtypes=SUPPORTED_DTYPES, s_dtypes=SUPPORTED_DTYPES) -> None:
    """Check the four tensors of a merge (shapes (T, H, D) and (T, H), floating dtypes; v_a and v_b
    of one shape and dtype); raise :class:`InvalidArgument` naming the first bad one."""
    _check_tensor(v_a, "v_a", "T, H, D", v_dtypes)
    _check_tensor(s_a, "s_a", "T, H", s_dtypes)
    _check_tensor(v_b, "v_b", "T, H, D", v_dtypes)
    _check_tensor(s_b, "s_b", "T, H", s_dtypes)
    if v_b.shape != v_a.shape:
        raise InvalidArgument(
            f"v_b.shape={tuple(v_b.shape)} does not match v_a.shape={tuple(v_a.shape)}: both states must "
            "cover the same tokens, heads and head dim."
        )
    if v_b.dtype != v_a.dtype:
        raise InvalidArgument(
            f"v_b.dtype={v_b.dtype} differs from v_a.dtype={v_a.dtype}: cast one to the other (the merged v "
            "comes back in v_a's dtype)."
        )
    _check_lse_shape(s_a, "s_a", v_a, "v_a")
    _check_lse_shape(s_b, "s_b", v_a, "v_a")


def validate_combine_inputs(v, s, *, v_dtypes=SUPPORTED_DTYPES, s_dtypes=SUPPORTED_DTYPES) -> None:
    """Check combine's two tensors: v (S, T, H, D) and s (S, T, H) of floating dtypes."""
    _check_tensor(v, "v", "S, T, H, D", v_dtypes)
    _check_tensor(s, "s", "S, T, H", s_dtypes)
    _check_lse_shape(s, "s", v, "v")


def refuse_positive_infinity(lses: torch.Tensor, name: str) -> None:
    """s = +inf is outside the contract: raise :class:`InvalidArgument` at its first occurrence."""
    where = torch.nonzero(lses == INF)
    if where.numel():
        index = ", ".join(str(int(i)) for i in where[0])
        raise InvalidArgument(
            f"{name}[{index}]=inf; an LSE of +inf (a score of +inf, or a sum that overflowed) is outside the "
            "merge contract: its weight would be inf / inf. Clamp the scores, or mark the state empty with -inf."
        )


def weights_and_lse(lses: torch.Tensor, *, base: str | int = "e") -> tuple[torch.Tensor, torch.Tensor]:
    """(w, s_out) of S states: w_k (S, ...) and s_out (...) in float64, in the log1p form above.

    ``lses`` holds the states' LSEs along dim 0, +inf already refused. Empty states get w = 0; where
    all are empty s_out = -inf and every w = 0; NaN anywhere along dim 0 gives NaN in s_out and in
    that position's w.
    """
    lses = lses.to(torch.float64)
    nan = torch.isnan(lses)
    no_nan = torch.where(nan, torch.full_like(lses, -INF), lses)  # nan_to_num would also move -inf
    row_max = no_nan.amax(dim=0)
    all_empty = row_max == -INF
    # No finite shift exists where every state is empty: 0 keeps t = -inf there (not -inf - -inf).
    shift = torch.where(all_empty, torch.zeros_like(row_max), row_max)
    shifted = lses - shift  # t_k <= 0: exact to an ulp at any |s|, unlike s_k - s_out
    terms = torch.exp2(shifted) if base == 2 else torch.exp(shifted)
    # One occurrence of the max contributes exactly 1: drop it, and add it back through log1p.
    others = terms.scatter(0, no_nan.argmax(dim=0, keepdim=True), 0.0).sum(dim=0)
    log_total = torch.log1p(others) / (math.log(2.0) if base == 2 else 1.0)
    merged_lse = torch.where(all_empty, torch.full_like(shift, -INF), shift + log_total)
    weights = terms / (1.0 + others)
    nan = nan.any(dim=0)
    merged_lse = torch.where(nan, torch.full_like(merged_lse, math.nan), merged_lse)
    return torch.where(nan, torch.full_like(weights, math.nan), weights), merged_lse


def merge_stacked(values: torch.Tensor, lses: torch.Tensor, *,
                  base: str | int = "e") -> tuple[torch.Tensor, torch.Tensor]:
    """The oracle over validated states stacked along dim 0: values (S, T, H, D), lses (S, T, H),
    +inf already refused; (v, s) in float64 on the CPU."""
    values = values.detach().to(device="cpu", dtype=torch.float64)
    lses = lses.detach().to(device="cpu", dtype=torch.float64)
    if values.shape[0] == 0:
        return torch.zeros(values.shape[1:], dtype=torch.float64), torch.full(lses.shape[1:], -INF, dtype=torch.float64)
    weights, merged_lse = weights_and_lse(lses, base=base)
    # A positive weight carries an infinite value whole: w * inf would be NaN where w underflowed to 0.
    terms = torch.where(torch.isinf(values), values, weights[..., None] * values)
    # An empty state contributes nothing, whatever its v holds (NaN, inf, garbage).
    terms = torch.where((lses == -INF)[..., None], torch.zeros_like(terms), terms)
    merged = terms.sum(dim=0)
    merged = torch.where(torch.isnan(merged_lse)[..., None], torch.full_like(merged, math.nan), merged)
    return merged, merged_lse


def merge_state_reference(v_a, s_a, v_b, s_b, *, base: str | int = "e") -> tuple[torch.Tensor, torch.Tensor]:
    """Merge two attention states exactly (to a few float64 ulps): (v (T, H, D), s (T, H)) in float64, on the CPU.

    v_a, v_b: (T, H, D) partial outputs; s_a, s_b: (T, H) their LSEs in ``base`` ("e" or 2). Edge
    semantics as in the module docstring; s = +inf raises :class:`InvalidArgument`.
    """
    validate_merge_inputs(v_a, s_a, v_b, s_b)
    base = check_base(base)
    refuse_positive_infinity(s_a, "s_a")
    refuse_positive_infinity(s_b, "s_b")
    return merge_stacked(torch.stack([v_a.detach().cpu(), v_b.detach().cpu()]),
                         torch.stack([s_a.detach().cpu().double(), s_b.detach().cpu().double()]), base=base)


def combine_reference(v, s, *, base: str | int = "e") -> tuple[torch.Tensor, torch.Tensor]:
    """Combine S split states exactly: (v_out (T, H, D), s_out (T, H)) in float64, on the CPU.

    v: (S, T, H, D) partial outputs, s: (S, T, H) their LSEs in ``base`` ("e" or 2); the kernels'
    contract is S from 1 to 64, the oracle takes any S (S = 0 gives v = 0, s = -inf). Edge semantics
    as in the module docstring; s = +inf raises :class:`InvalidArgument`.
    """
    validate_combine_inputs(v, s)
    base = check_base(base)
    refuse_positive_infinity(s, "s")
    return merge_stacked(v, s, base=base)
