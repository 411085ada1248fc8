"""reference.merge_state, the correct Triton merge kernel, against the oracle across its contract."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from reference import InvalidArgument, check_merge, merge_state
from reference._merge_state_kernel import MAX_HEAD_DIM, MergeLaunch, _merge_run, merge_launch

INF, NAN = math.inf, math.nan
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
V_DTYPES = [F32, F16, BF16]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _assert_agrees(v_a, s_a, v_b, s_b, got, base="e") -> None:
    got_v, got_s = got
    assert got_v.dtype == v_a.dtype and got_s.dtype == F32
    assert got_v.shape == v_a.shape and got_s.shape == v_a.shape[:2]
    assert got_v.is_contiguous() and got_s.is_contiguous()
    comparison = check_merge(v_a, s_a, v_b, s_b, got_v, got_s, base=base)
    assert comparison.ok, comparison.explain()


def _states(tokens, heads, head_dim, dtype, *, seed=0, scale=5.0):
    gen = torch.Generator().manual_seed(seed)
    s_a = torch.randn(tokens, heads, generator=gen) * scale
    s_b = torch.randn(tokens, heads, generator=gen) * scale
    v_a = torch.randn(tokens, heads, head_dim, generator=gen).to(dtype)
    v_b = torch.randn(tokens, heads, head_dim, generator=gen).to(dtype)
    return v_a, s_a, v_b, s_b


def _with_edges(v_a, s_a, v_b, s_b):
    """The first five (t, h) rows made edge rows: one empty either way, both empty, NaN, a huge tie."""
    edits = [(-INF, None), (None, -INF), (-INF, -INF), (NAN, None), (1e30, 1e30)]
    for row, (a, b) in enumerate(edits[:s_a.numel()]):
        t, h = divmod(row, s_a.shape[1])
        if a is not None:
            s_a[t, h] = a
        if b is not None:
            s_b[t, h] = b
    return v_a, s_a, v_b, s_b


@pytest.mark.parametrize("base", ["e", 2])
@pytest.mark.parametrize("head_dim", [1, 3, 100, 128])
@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_agrees_with_the_oracle(dtype, head_dim, base):
    states = _with_edges(*_states(4, 3, head_dim, dtype, seed=head_dim))
    _assert_agrees(*states, merge_state(*states, base=base), base)


@pytest.mark.parametrize("tokens, heads", [(0, 4), (3, 0), (0, 0), (1, 1)])
@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_zero_and_one_rows(tokens, heads, dtype):
    states = _states(tokens, heads, 5, dtype)
    got_v, got_s = merge_state(*states)
    assert got_v.shape == (tokens, heads, 5) and got_s.shape == (tokens, heads)
    _assert_agrees(*states, (got_v, got_s))


def test_a_head_dim_of_zero_still_merges_the_lses():
    v = torch.empty(3, 2, 0)
    s_a, s_b = torch.randn(3, 2), torch.randn(3, 2)
    got_v, got_s = merge_state(v, s_a, v, s_b)
    assert got_v.shape == (3, 2, 0)
    torch.testing.assert_close(got_s, torch.logaddexp(s_a, s_b))


@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_transposed_lses_and_strided_values(dtype):
    tokens, heads, head_dim = 5, 3, 6
    v_a, s_a, v_b, s_b = _states(tokens, heads, head_dim, dtype, seed=1)
    s_a_t = s_a.t().contiguous().t()  # an (H, T) tensor viewed as (T, H): strides (1, T)
    s_b_t = torch.full((heads + 2, tokens * 2), NAN)[1:heads + 1, ::2].t()  # offset, step, transposed
    s_b_t.copy_(s_b)
    v_a_s = torch.full((tokens, heads, 2 * head_dim), NAN, dtype=dtype)[:, :, ::2]  # a step of 2 in D
    v_a_s.copy_(v_a)
    v_b_p = torch.full((heads, tokens, 3 * head_dim), NAN, dtype=dtype)[:, :, ::3].permute(1, 0, 2)  # head-major
    v_b_p.copy_(v_b)
    assert s_a_t.stride() == (1, tokens) and v_a_s.stride() == (2 * heads * head_dim, 2 * head_dim, 2)
    assert v_b_p.stride() == (3 * head_dim, 3 * tokens * head_dim, 3)
    expected = merge_state(v_a, s_a, v_b, s_b)
    got = merge_state(v_a_s, s_a_t, v_b_p, s_b_t)
    _assert_agrees(v_a_s, s_a_t, v_b_p, s_b_t, got)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])  # same values, same bits


def test_two_empty_states_give_zero_and_minus_inf_never_nan():
    v = torch.full((2, 2, 4), NAN)
    v[1] = INF
    empty = torch.full((2, 2), -INF)
    got_v, got_s = merge_state(v, empty, v.clone(), empty)
    assert torch.equal(got_v, torch.zeros(2, 2, 4)) and (got_s == -INF).all()


@pytest.mark.parametrize("dtype", V_DTYPES, ids=_name)
def test_one_empty_state_is_the_identity_bit_for_bit(dtype):
    v, s, _, _ = _states(4, 2, 7, dtype, seed=2, scale=1e4)
    garbage, empty = torch.full_like(v, NAN), torch.full_like(s, -INF)
    for args in ((v, s, garbage, empty), (garbage, empty, v, s)):
        got_v, got_s = merge_state(*args)
        assert torch.equal(got_v, v) and torch.equal(got_s, s)


def test_nan_rows_and_infinite_values():
    v_a, v_b = torch.ones(4, 1, 3), torch.ones(4, 1, 3)
    v_a[2, 0, 0] = INF  # a NaN state's inf beside an empty state: still NaN
    v_b[3, 0] = torch.tensor([INF, -INF, 2.0])
    s_a = torch.tensor([[NAN], [0.0], [NAN], [0.0]])
    s_b = torch.tensor([[0.0], [NAN], [-INF], [-200.0]])  # row 3: v_b's weight underflows float32, inf stays
    got_v, got_s = merge_state(v_a, s_a, v_b, s_b)
    assert torch.isnan(got_s[:3]).all() and torch.isnan(got_v[:3]).all()
    assert got_v[3, 0].tolist() == [INF, -INF, 1.0] and got_s[3, 0] == 0.0
    _assert_agrees(v_a, s_a, v_b, s_b, (got_v, got_s))


def test_positive_infinity_outside_the_contract_gives_nan_not_a_plausible_number():
    # The oracle refuses s = +inf (no finite weights); the kernel does not scan for it, as documented.
    v = torch.ones(3, 1, 2)
    s_a = torch.tensor([[INF], [INF], [INF]])
    s_b = torch.tensor([[0.0], [INF], [-INF]])
    got_v, got_s = merge_state(v, s_a, v, s_b)
    assert torch.isnan(got_v).all() and torch.isnan(got_s).all()


def test_a_huge_tie_gives_the_mean():
    # Weights against the merged s (rounded: 1e30 + log 2 is 1e30) would be 1 each: v_a + v_b.
    v_a, v_b = torch.full((1, 1, 2), 2.0), torch.full((1, 1, 2), 4.0)
    s = torch.full((1, 1), 1e30)
    got_v, got_s = merge_state(v_a, s, v_b, s)
    assert got_v.flatten().tolist() == [3.0, 3.0] and torch.equal(got_s, s)  # 1e30 + log 2 rounds to 1e30


def _forced(v_a, s_a, v_b, s_b, *, block_rows, int64):
    """The launch the policy picks, with the rows per program and the index width forced."""
    cfg = merge_launch(v_a, s_a, v_b, s_b, interpreter=True)
    rows = v_a.shape[0] * v_a.shape[1]
    cfg = dataclasses.replace(cfg, block_rows=block_rows, int64=int64, programs=math.ceil(rows / block_rows))
    assert isinstance(cfg, MergeLaunch) and cfg.programs > 1
    return _merge_run(v_a, s_a, v_b, s_b, cfg, "e")


@pytest.mark.parametrize("block_rows", [1, 2, 4])
@pytest.mark.parametrize("int64", [False, True], ids=["int32", "int64"])
def test_many_programs_masked_tail_rows_and_64_bit_offsets(block_rows, int64):
    """The GPU policy's shape (several programs, the last one part-empty) and the 64-bit index math."""
    states = _with_edges(*_states(7, 3, 10, BF16, seed=3))  # 21 rows: not a multiple of 2 or 4
    got = _forced(*states, block_rows=block_rows, int64=int64)
    _assert_agrees(*states, got)
    torch.testing.assert_close(got, merge_state(*states), rtol=0, atol=0, equal_nan=True)  # the same bits


def _meta(shape, strides=None, dtype=F32):
    if strides is None:
        return torch.empty(shape, dtype=dtype, device="meta")
    return torch.empty_strided(shape, strides, dtype=dtype, device="meta")


def test_launch_policy():
    v, s = _meta((4096, 32, 128), dtype=BF16), _meta((4096, 32))
    gpu = merge_launch(v, s, v, s, interpreter=False)
    assert (gpu.block_d, gpu.block_rows, gpu.programs, gpu.int64) == (128, 16, 4096 * 32 // 16, False)
    odd = _meta((3, 5, 100))
    assert merge_launch(odd, _meta((3, 5)), odd, _meta((3, 5)), interpreter=True).block_d == 128
    one = _meta((1, 1, 1))
    assert merge_launch(one, _meta((1, 1)), one, _meta((1, 1)), interpreter=False).block_d == 1
    # Any one tensor's largest offset past 2**31 - 1 elements switches to 64-bit index math.
    far_s = _meta((4, 2), (2**30, 1))
    assert merge_launch(odd[:4, :2], far_s, odd[:4, :2], _meta((4, 2)), interpreter=False).int64
    assert not merge_launch(odd[:4, :2], _meta((4, 2), (2**28, 1)), odd[:4, :2], _meta((4, 2)), interpreter=False).int64
    big = _meta((2**16, 64, 512))  # 2**31 output elements
    assert merge_launch(big, _meta((2**16, 64)), big, _meta((2**16, 64)), interpreter=False).int64


def test_a_head_dim_past_the_limit_is_refused_with_the_limit_named():
    wide = _meta((1, 1, MAX_HEAD_DIM + 1))
    with pytest.raises(InvalidArgument) as info:
        merge_launch(wide, _meta((1, 1)), wide, _meta((1, 1)), interpreter=True)
    assert f"v_a.shape[2]={MAX_HEAD_DIM + 1} exceeds MAX_HEAD_DIM={MAX_HEAD_DIM}" in str(info.value)


V, S = torch.zeros(2, 3, 4), torch.zeros(2, 3)
BAD = {
    "v float64": ((V.double(), S, V.double(), S), {},
                  "v_a.dtype=torch.float64; supported dtypes are float32, float16, bfloat16"),
    "s float16": ((V, S.half(), V, S), {}, "s_a.dtype=torch.float16; supported dtypes are float32"),
    "v_a 2-D": ((S, S, V, S), {}, "v_a.shape=(2, 3); expected a 3-D (T, H, D) tensor"),
    "v_b other D": ((V, S, torch.zeros(2, 3, 5), S), {}, "v_b.shape=(2, 3, 5) does not match v_a.shape=(2, 3, 4)"),
    "s_b other T": ((V, S, V, torch.zeros(3, 3)), {}, "s_b.shape=(3, 3); expected (2, 3)"),
    "v dtypes differ": ((V, S, V.bfloat16(), S), {}, "v_b.dtype=torch.bfloat16 differs from v_a.dtype=torch.float32"),
    "s on another device": ((V, S, V, S.to("meta")), {}, "s_b.device='meta' differs from v_a.device='cpu'"),
    "base": ((V, S, V, S), {"base": "ten"}, "base='ten'; expected \"e\""),
    "s_a str": ((V, "s", V, S), {}, "s_a=str object; expected a 2-D (T, H) torch.Tensor"),
}


@pytest.mark.parametrize("args, options, message", list(BAD.values()), ids=list(BAD))
def test_bad_input_is_named_in_the_message(args, options, message):
    with pytest.raises(InvalidArgument) as info:
        merge_state(*args, **options)
    assert message in str(info.value)


@st.composite
def layouts(draw):
    """Shapes, dtypes, layouts and edge rows that break merge kernels (a compact, local menu)."""
    tokens, heads = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    head_dim = draw(st.sampled_from([1, 2, 3, 16, 33, 64]))
    dtype = draw(st.sampled_from(V_DTYPES))
    scale = draw(st.sampled_from([0.5, 5.0, 300.0, 1e5]))
    v_a, s_a, v_b, s_b = _states(tokens, heads, head_dim, dtype, seed=draw(st.integers(0, 2**20)), scale=scale)
    for row in draw(st.lists(st.integers(0, tokens * heads - 1), max_size=4)):
        t, h = divmod(row, heads)
        kind = draw(st.sampled_from(["a empty", "b empty", "both empty", "nan", "tie"]))
        if kind in ("a empty", "both empty"):
            s_a[t, h], v_a[t, h] = -INF, NAN
        if kind in ("b empty", "both empty"):
            s_b[t, h], v_b[t, h] = -INF, NAN
        if kind == "nan":
            s_b[t, h] = NAN
        if kind == "tie":
            s_b[t, h] = s_a[t, h]
    if draw(st.booleans()):
        s_a = s_a.t().contiguous().t()
    if draw(st.booleans()):
        v_b = v_b.transpose(0, 1).contiguous().transpose(0, 1)
    return v_a, s_a, v_b, s_b, draw(st.sampled_from(["e", 2]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=layouts())
def test_agrees_with_the_oracle_on_drawn_inputs(inputs):
    *states, base = inputs
    before = [t.clone() for t in states]
    _assert_agrees(*states, merge_state(*states, base=base), base)
    for after, original in zip(states, before):  # the inputs are left as they were
        torch.testing.assert_close(after, original, rtol=0, atol=0, equal_nan=True)


HUGE_OFFSET_SCRIPT = textwrap.dedent(
    """
    import torch, reference
    # Lazily allocated: torch.empty touches no memory until the views' few elements are written.
    base = torch.empty(2**32 + 2**20, dtype=torch.float16)
    v_a = base.as_strided((3, 2, 8), (2**30 + 8, 8, 1), storage_offset=2**20)  # token 2 starts 2**31 + 16 in
    v_a.copy_(torch.randn(3, 2, 8))
    v_b, s_a, s_b = torch.randn(3, 2, 8).half(), torch.randn(3, 2), torch.randn(3, 2)
    got = reference.merge_state(v_a, s_a, v_b, s_b)
    print("OK" if reference.check_merge(v_a, s_a, v_b, s_b, *got).ok else "MISMATCH")
    """
)


def test_huge_token_offsets_use_64_bit_index_math():
    """v_a's last token lies 2**31 + 16 elements past its first: 32-bit index math would wrap (run isolated)."""
    proc = subprocess.run([sys.executable, "-c", HUGE_OFFSET_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "OK"
