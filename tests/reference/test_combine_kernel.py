"""reference._combine_kernel.combine, the correct Triton split-K combine, against the oracle across its contract."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from reference import InvalidArgument, check_combine
from reference._combine_kernel import CombineLaunch, _combine_run, combine, combine_launch
from reference._merge_state_kernel import MAX_HEAD_DIM

INF, NAN = math.inf, math.nan
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
V_DTYPES = [F32, F16, BF16]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _assert_agrees(v, s, got, base="e") -> None:
    got_v, got_s = got
    assert got_v.dtype == v.dtype and got_s.dtype == F32
    assert got_v.shape == v.shape[1:] and got_s.shape == v.shape[1:3]
    assert got_v.is_contiguous() and got_s.is_contiguous()
    comparison = check_combine(v, s, got_v, got_s, base=base)
    assert comparison.ok, comparison.explain()


def _states(splits, tokens, heads, head_dim, dtype, *, seed=0, scale=5.0):
    gen = torch.Generator().manual_seed(seed)
    s = torch.randn(splits, tokens, heads, generator=gen) * scale
    v = torch.randn(splits, tokens, heads, head_dim, generator=gen).to(dtype)
    return v, s


def _with_edges(v, s):
    """The first rows made edge rows: all splits empty, the last one alone non-empty, NaN in one split,
    a huge tie, one split far above the rest. Every empty split's v is NaN (never to be read)."""
    splits, tokens, heads = s.shape
    rows = s.view(splits, tokens * heads)  # s is contiguous here: a view, so the edits land in s
    edits = [[-INF] * splits, [-INF] * (splits - 1) + [1.5], [NAN] + [0.0] * (splits - 1), [1e30] * splits,
             [40.0] + [-80.0] * (splits - 1)]
    for row, lses in enumerate(edits[:tokens * heads]):
        rows[:, row] = torch.tensor(lses)
    v[s == -INF] = NAN
    return v, s


@pytest.mark.parametrize("base", ["e", 2])
@pytest.mark.parametrize("splits", [1, 3, 64])
@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_agrees_with_the_oracle(dtype, splits, base):
    v, s = _with_edges(*_states(splits, 3, 2, 5, dtype, seed=splits))
    _assert_agrees(v, s, combine(v, s, base=base), base)


@pytest.mark.parametrize("splits", [65, 100])
def test_more_splits_than_one_step_hold_with_the_gpu_policy(splits):
    v, s = _with_edges(*_states(splits, 2, 3, 64, BF16, seed=splits, scale=30.0))
    cfg = combine_launch(v, s, interpreter=False)
    assert cfg.block_splits == 64  # 4096 / D: two steps, the second part-empty
    _assert_agrees(v, s, _combine_run(v, s, cfg, "e"))
    _assert_agrees(v, s, combine(v, s))  # the interpreter's policy: one step


@pytest.mark.parametrize("tokens, heads", [(0, 4), (3, 0), (0, 0), (1, 1)])
@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_zero_and_one_rows(tokens, heads, dtype):
    v, s = _states(2, tokens, heads, 5, dtype)
    got_v, got_s = combine(v, s)
    assert got_v.shape == (tokens, heads, 5) and got_s.shape == (tokens, heads)
    _assert_agrees(v, s, (got_v, got_s))


def test_no_splits_give_zero_and_minus_inf_and_a_head_dim_of_zero_still_combines_the_lses():
    got_v, got_s = combine(torch.empty(0, 2, 3, 4), torch.empty(0, 2, 3))  # the oracle's S = 0: all empty
    assert torch.equal(got_v, torch.zeros(2, 3, 4)) and (got_s == -INF).all()
    s = torch.randn(4, 3, 2)
    got_v, got_s = combine(torch.empty(4, 3, 2, 0), s)
    assert got_v.shape == (3, 2, 0)
    torch.testing.assert_close(got_s, torch.logsumexp(s, dim=0))


def _laid_out(values: torch.Tensor, fill, *, step: int, outer: tuple[int, ...]) -> torch.Tensor:
    """``values`` in a storage of NaN with dims ordered as ``outer`` and a step in the last dim."""
    shape = [values.shape[d] for d in outer]
    shape[-1] *= step
    storage = torch.full(shape, fill, dtype=values.dtype)[..., ::step]
    view = storage.permute(*[outer.index(d) for d in range(values.dim())])
    return view.copy_(values)


@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_transposed_and_strided_layouts_give_the_same_bits(dtype):
    v, s = _with_edges(*_states(5, 3, 2, 6, dtype, seed=1))
    layouts = {
        "s transposed, v head-major": (_laid_out(v, NAN, step=1, outer=(0, 2, 1, 3)),
                                       _laid_out(s, NAN, step=1, outer=(0, 2, 1))),
        "splits innermost, steps of 2 and 3": (_laid_out(v, NAN, step=2, outer=(1, 2, 3, 0)),
                                               _laid_out(s, NAN, step=3, outer=(1, 2, 0))),
        "offset": (torch.full((2, *v.shape), NAN, dtype=dtype)[1].copy_(v),
                   torch.full((3, *s.shape), NAN)[2].copy_(s)),
    }
    expected = combine(v, s)
    for name, (v_laid, s_laid) in layouts.items():
        assert not (v_laid.is_contiguous() and s_laid.is_contiguous()) or name == "offset"
        got = combine(v_laid, s_laid)
        _assert_agrees(v_laid, s_laid, got)
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True, msg=name)  # the same bits


def test_all_splits_empty_give_zero_and_minus_inf_never_nan():
    v = torch.full((3, 2, 2, 4), NAN)
    v[1] = INF
    got_v, got_s = combine(v, torch.full((3, 2, 2), -INF))
    assert torch.equal(got_v, torch.zeros(2, 2, 4)) and (got_s == -INF).all()


@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_empty_splits_are_skipped_one_non_empty_split_comes_back_bit_for_bit(dtype):
    v, s = _states(1, 4, 2, 7, dtype, seed=2, scale=1e4)
    for where in (0, 2):  # the non-empty split first, then in the middle of empty ones
        v_all = torch.full((3, *v.shape[1:]), NAN, dtype=dtype)
        s_all = torch.full((3, *s.shape[1:]), -INF)
        v_all[where], s_all[where] = v[0], s[0]
        got_v, got_s = combine(v_all, s_all)
        assert torch.equal(got_v, v[0]) and torch.equal(got_s, s[0])


def test_nan_rows_and_infinite_values():
    v = torch.ones(2, 4, 1, 3)
    v[0, 2, 0, 0] = INF  # a NaN row's inf beside an empty split: still NaN
    v[1, 3, 0] = torch.tensor([INF, -INF, 2.0])
    s = torch.tensor([[[NAN], [0.0], [NAN], [0.0]],
                      [[0.0], [NAN], [-INF], [-200.0]]])  # row 3: split 1's weight underflows float32, inf stays
    got_v, got_s = combine(v, s)
    assert torch.isnan(got_s[:3]).all() and torch.isnan(got_v[:3]).all()
    assert got_v[3, 0].tolist() == [INF, -INF, 1.0] and got_s[3, 0] == 0.0
    _assert_agrees(v, s, (got_v, got_s))


def test_positive_infinity_outside_the_contract_gives_nan_not_a_plausible_number():
    # The oracle refuses s = +inf (no finite weights); the kernel does not scan for it, as documented.
    v = torch.ones(2, 3, 1, 2)
    s = torch.tensor([[[INF], [INF], [INF]], [[0.0], [INF], [-INF]]])
    got_v, got_s = combine(v, s)
    assert torch.isnan(got_v).all() and torch.isnan(got_s).all()


@pytest.mark.parametrize("base", ["e", 2])
def test_a_huge_tie_gives_the_mean(base):
    # Weights against the combined s (rounded: 1e30 + log 4 is 1e30) would be 1 each: the sum, not the mean.
    v = torch.tensor([2.0, 4.0, 6.0, 8.0]).reshape(4, 1, 1, 1).expand(4, 1, 1, 2)
    s = torch.full((4, 1, 1), 1e30)
    got_v, got_s = combine(v, s, base=base)
    assert got_v.flatten().tolist() == [5.0, 5.0] and torch.equal(got_s, s[0])


def _forced(v, s, *, block_splits, int64, base="e"):
    """The launch the policy picks, with the splits per step and the index width forced."""
    cfg = dataclasses.replace(combine_launch(v, s, interpreter=True), block_splits=block_splits, int64=int64)
    assert isinstance(cfg, CombineLaunch)
    return _combine_run(v, s, cfg, base)


@pytest.mark.parametrize("block_splits", [1, 4])
@pytest.mark.parametrize("int64", [False, True], ids=["int32", "int64"])
def test_several_steps_a_masked_tail_and_64_bit_offsets(block_splits, int64):
    """Steps over the splits (the last one part-empty: 7 splits) and the 64-bit index math."""
    v, s = _with_edges(*_states(7, 3, 2, 10, BF16, seed=3))
    got = _forced(v, s, block_splits=block_splits, int64=int64, base=2)
    _assert_agrees(v, s, got, base=2)
    same_steps = _forced(v, s, block_splits=block_splits, int64=not int64, base=2)
    torch.testing.assert_close(got, same_steps, rtol=0, atol=0, equal_nan=True)  # the index width changes no bit


def _meta(shape, strides=None, dtype=F32):
    if strides is None:
        return torch.empty(shape, dtype=dtype, device="meta")
    return torch.empty_strided(shape, strides, dtype=dtype, device="meta")


def test_launch_policy():
    v, s = _meta((16, 64, 32, 128), dtype=BF16), _meta((16, 64, 32))
    gpu = combine_launch(v, s, interpreter=False)
    assert (gpu.block_d, gpu.block_splits, gpu.programs, gpu.int64) == (128, 16, 64 * 32, False)
    assert combine_launch(v, s, interpreter=True).block_splits == 16  # S itself when it fits a tile
    odd = _meta((3, 5, 2, 100))
    assert combine_launch(odd, _meta((3, 5, 2)), interpreter=False).block_d == 128
    one = combine_launch(_meta((1, 1, 1, 1)), _meta((1, 1, 1)), interpreter=False)
    assert (one.block_d, one.block_splits) == (1, 1)
    assert combine_launch(_meta((64, 1, 1, 4096)), _meta((64, 1, 1)), interpreter=False).block_splits == 1
    # Any one tensor's largest offset past 2**31 - 1 elements switches to 64-bit index math.
    assert combine_launch(_meta((3, 1, 1, 4), (2**30, 4, 4, 1)), _meta((3, 1, 1)), interpreter=False).int64
    assert not combine_launch(_meta((3, 1, 1, 4), (2**29, 4, 4, 1)), _meta((3, 1, 1)), interpreter=False).int64
    assert combine_launch(_meta((2, 1, 1, 4)), _meta((2, 1, 1), (2**31, 1, 1)), interpreter=False).int64
    big = _meta((2, 2**16, 64, 512))  # 2**31 output elements
    assert combine_launch(big, _meta((2, 2**16, 64)), interpreter=False).int64


def test_a_head_dim_past_the_limit_is_refused_with_the_limit_named():
    with pytest.raises(InvalidArgument) as info:
        combine_launch(_meta((2, 1, 1, MAX_HEAD_DIM + 1)), _meta((2, 1, 1)), interpreter=True)
    assert f"v.shape[3]={MAX_HEAD_DIM + 1} exceeds MAX_HEAD_DIM={MAX_HEAD_DIM}" in str(info.value)


V, S = torch.zeros(4, 2, 3, 5), torch.zeros(4, 2, 3)
BAD = {
    "v float64": ((V.double(), S), {}, "v.dtype=torch.float64; supported dtypes are float32, float16, bfloat16"),
    "s float16": ((V, S.half()), {}, "s.dtype=torch.float16; supported dtypes are float32"),
    "v 3-D": ((S, S), {}, "v.shape=(4, 2, 3); expected a 4-D (S, T, H, D) tensor"),
    "s other S": ((V, torch.zeros(3, 2, 3)), {}, "s.shape=(3, 2, 3); expected (4, 2, 3)"),
    "s on another device": ((V, S.to("meta")), {}, "s.device='meta' differs from v.device='cpu'"),
    "base": ((V, S), {"base": "ten"}, "base='ten'; expected \"e\""),
    "s str": ((V, "s"), {}, "s=str object; expected a 3-D (S, T, H) torch.Tensor"),
}


@pytest.mark.parametrize("args, options, message", list(BAD.values()), ids=list(BAD))
def test_bad_input_is_named_in_the_message(args, options, message):
    with pytest.raises(InvalidArgument) as info:
        combine(*args, **options)
    assert message in str(info.value)


SUBPROCESS_SCRIPT = textwrap.dedent(
    """
    import dataclasses, json, torch, reference
    from fuzz.interpreter import frontend
    from reference._combine_kernel import combine, combine_launch, _combine_run
    frontend.install()  # before the first launch: it records Triton's language as a compile sees it
    # Lazily allocated: torch.empty touches no memory until the view's few elements are written.
    storage = torch.empty(2**32 + 2**20, dtype=torch.float16)
    v = storage.as_strided((3, 2, 1, 8), (2**30 + 16, 8, 8, 1), storage_offset=2**20)  # split 2: 2**31 + 32 in
    v.copy_(torch.randn(3, 2, 1, 8))
    s = torch.randn(3, 2, 1)
    offsets_ok = reference.check_combine(v, s, *combine(v, s)).ok
    # The GPU's front end (TTIR for an sm_90 target) on the specializations the tests launch.
    small_v = v.contiguous()
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for base in ("e", 2):
            for splits, block, int64 in ((1, 1, False), (3, 2, True), (3, 4, False)):
                values, lses = small_v[:splits].to(dtype), s[:splits]
                cfg = dataclasses.replace(combine_launch(values, lses, interpreter=True), block_splits=block,
                                          int64=int64)
                _combine_run(values, lses, cfg, base)
    print(json.dumps({"offsets_ok": offsets_ok, "front_end": frontend.stats()}))
    """
)


def test_huge_split_offsets_and_the_gpu_compiler_s_front_end():
    """v's last split lies 2**31 + 32 elements past its first: 32-bit index math would wrap; and the
    kernel compiles for a GPU (Triton's code generator, run on the CPU: no rejected or skipped
    specialization). Run isolated: the lazily allocated storage, and the front end's patches."""
    proc = subprocess.run([sys.executable, "-c", SUBPROCESS_SCRIPT], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["offsets_ok"], proc.stdout
    stats = result["front_end"]
    assert stats["runs"] >= 18 and stats["rejected"] == 0 and stats["skipped"] == 0, stats
