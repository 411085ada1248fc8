"""The combine checks: the correct combines pass drawn inputs, each broken combine fails the check that
names its bug on an input that shows it, each metamorphic check fails alone, and the draws cover
every kind, layout and split count that matters."""

from __future__ import annotations

import math

import pytest
import torch
from doubles import combine as combines
from hypothesis import HealthCheck, given, settings

from fuzz.failures import ImplError
from fuzz.merge.checks import MergeFailure
from fuzz.merge.combine_checks import COMBINE_CHECKS, run_combine_checks
from fuzz.merge.combine_strategies import COMBINE_KINDS, MAX_SPLITS, CombineInput, _split_lses, combine_inputs, laid_out
from reference import combine as reference_combine
from reference.errors import InvalidArgument

INF = math.inf
FUZZ = settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def example(s, *, tokens=1, dim=3, layout="contiguous", dtype=torch.float32) -> CombineInput:
    """A hand-made input: ``s`` is (S, T * H) LSEs, one list per split; v is seeded noise."""
    s = torch.tensor(s, dtype=torch.float32).reshape(len(s), tokens, -1)
    v = torch.randn(*s.shape, dim, generator=torch.Generator().manual_seed(0)).to(dtype)
    if layout == "transposed":
        s = s.transpose(1, 2).contiguous().transpose(1, 2)
    return CombineInput(v, s, kinds=("given",) * (s.shape[1] * s.shape[2]), layout=layout)


def failure(fn, ex: CombineInput, checks=COMBINE_CHECKS) -> MergeFailure:
    with pytest.raises(MergeFailure) as info:
        run_combine_checks(fn, ex, checks=checks)
    return info.value


@pytest.mark.parametrize("fn", [reference_combine, combines.correct], ids=["reference", "torch"])
def test_correct_combines_pass_every_check_on_drawn_inputs(fn):
    @FUZZ
    @given(combine_inputs(max_tokens=3, max_heads=2, max_dim=16))
    def run(ex):
        run_combine_checks(fn, ex)

    run()


def test_a_correct_combine_passes_in_base_2():
    @settings(FUZZ, max_examples=15)
    @given(combine_inputs(max_tokens=2, max_heads=2, max_dim=8, base=2))
    def run(ex):
        run_combine_checks(lambda v, s: reference_combine(v, s, base=2), ex)

    run()


ORDINARY = [[0.0, 2.0], [1.0, -3.0], [0.5, 0.5]]  # three splits of two (t, h) rows


@pytest.mark.parametrize(("fn", "ex", "check", "text"), [
    (combines.no_empty_guard, example([[-INF, 0.0], [-INF, 1.0]]), "agreement", "expected 0.0, got nan"),
    (combines.finite_sentinel, example([[-INF], [-INF]]), "agreement", "expected -inf"),
    (combines.exp2_on_natural_logs, example(ORDINARY), "agreement", "outside the tolerance"),
    (combines.not_renormalized, example(ORDINARY), "agreement", "outside the tolerance"),
    (combines.lse_read_as_contiguous, example([[0.0, 5.0, -4.0, 2.0], [3.0, -2.0, 1.0, 0.5]], tokens=2,
                                              layout="transposed"), "agreement", "outside the tolerance"),
    (combines.first_16_splits, example([[float(k % 5)] for k in range(20)]), "agreement", "outside the tolerance"),
    (combines.first_split_as_max, example([[0.0], [150.0]]), "agreement", "got inf"),
    (combines.writes_v, example(ORDINARY), "inputs_unchanged", "changed v"),
    (combines.returns_one_tensor, example(ORDINARY), "output_contract",
     "returned Tensor, expected a pair (v_out, s_out)"),
    (combines.v_out_in_float32, example(ORDINARY, dtype=torch.float16), "output_contract",
     "v_out of shape (1, 2, 3) and dtype torch.float32; expected (1, 2, 3) and torch.float16"),
], ids=["no empty guard", "finite sentinel", "exp2 on natural logs", "not renormalized", "LSE stride ignored",
        "first 16 splits", "first split as max", "writes v", "one tensor", "v_out dtype"])
def test_each_broken_combine_fails_the_check_that_names_its_bug(fn, ex, check, text):
    found = failure(fn, ex)
    assert found.check == check and text in str(found), str(found)
    assert "input:    v float" in str(found) and " splits, LSEs " in str(found)


def test_a_combine_in_the_other_base_is_named_as_such():
    found = failure(lambda v, s: reference_combine(v, s, base=2), example(ORDINARY))
    assert found.check == "agreement" and "the kernel's LSEs are base 2" in str(found), str(found)


def test_a_combine_that_raises_is_the_implementation_s_error_naming_the_call():
    def raises(v, s):
        raise RuntimeError("no kernel for this shape")

    with pytest.raises(ImplError) as info:
        run_combine_checks(raises, example(ORDINARY))
    assert "RuntimeError raised by the implementation during combine(v, s): no kernel" in str(info.value)


def test_one_split_is_named_in_the_singular():
    assert example([[0.0]]).describe().startswith("v float32 (1, 1, 1, 3): 1 split, LSEs contiguous")


def test_the_first_16_splits_are_enough_up_to_16():
    # The bug needs S > 16 to show: at 16 splits the same double agrees (so S > 16 must be drawn).
    run_combine_checks(combines.first_16_splits, example([[float(k % 5)] for k in range(16)]))


@pytest.mark.parametrize(("fn", "ex", "check"), [
    (combines.first_split_as_max, example([[0.0], [-150.0]]), "permute"),  # s_0 is the max: only reversed overflows
    (combines.zero_weight_times_v, example(ORDINARY), "empty_split"),  # no empty split drawn
    (combines.no_max_shift, example([[86.0], [85.0]]), "shift"),  # exp(89) overflows only after the shift
], ids=["permute", "empty split", "shift"])
def test_each_metamorphic_check_fails_alone_on_a_bug_agreement_misses_there(fn, ex, check):
    run_combine_checks(fn, ex, checks=("agreement",))  # the drawn call itself is right
    others = tuple(c for c in ("permute", "empty_split", "shift") if c != check)
    run_combine_checks(fn, ex, checks=others)  # and only this metamorphic check sees the bug
    assert failure(fn, ex, checks=(check,)).check == check


def test_the_empty_split_takes_the_last_place_at_the_contract_s_most_splits():
    seen = []

    def spy(v, s):
        seen.append((tuple(v.shape), bool(torch.isnan(v[-1]).all()), bool((s[-1] == -INF).all())))
        return combines.correct(v, s)

    run_combine_checks(spy, example([[0.0]] * MAX_SPLITS), checks=("empty_split",))
    run_combine_checks(spy, example([[0.0]] * 3), checks=("empty_split",))
    assert seen[1] == ((MAX_SPLITS, 1, 1, 3), True, True) and seen[3] == ((4, 1, 1, 3), True, True)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_the_metamorphic_inputs_keep_the_example_s_layout(layout):
    seen = []

    def spy(v, s):
        seen.append((v, s))
        return combines.correct(v, s)

    plain = example([[0.0, 1.0, 2.0, 3.0]] * 3, tokens=2)  # S = 3, T = 2, H = 2
    ex = CombineInput(laid_out(plain.v, layout), laid_out(plain.s, layout), kinds=plain.kinds, layout=layout)
    assert ex.s.stride() != plain.s.stride()
    run_combine_checks(spy, ex)
    assert len(seen) == 4  # the call, then reversed, with an empty split, shifted
    for v, s in seen:
        assert v.stride() == laid_out(v.contiguous(), layout).stride()
        assert s.stride() == laid_out(s.contiguous(), layout).stride()


def test_drawn_inputs_cover_every_kind_layout_and_split_count():
    seen_kinds, seen_layouts, seen_splits = set(), set(), set()

    @settings(FUZZ, max_examples=120)
    @given(combine_inputs(max_tokens=3, max_heads=3, max_dim=4))
    def run(ex):
        splits, tokens, heads = ex.s.shape
        seen_kinds.update(ex.kinds)
        seen_layouts.add(ex.layout)
        seen_splits.add(splits)
        columns = ex.s.reshape(splits, -1).t()  # per (t, h), row-major as ex.kinds
        for kind, lses in zip(ex.kinds, columns):
            finite = torch.isfinite(lses)
            if kind == "all_empty":
                assert (lses == -INF).all()
            elif kind == "some_empty":
                assert finite.any() and ((lses == -INF) | finite).all()
            else:
                assert finite.all(), (kind, lses)
            if kind == "far_apart" and splits > 1:
                top = lses.topk(2).values
                assert top[0] - top[1] > 100
            if kind == "huge":
                assert (lses.abs() > 1e29).all()
        assert torch.isnan(ex.v[ex.s == -INF]).all()  # an empty split's v is the 0/0 it may leave
        if ex.layout == "transposed" and tokens > 1 and heads > 1:
            assert ex.s.stride()[1:] == (1, tokens) and ex.v.stride()[1:3] == (ex.v.shape[3], tokens * ex.v.shape[3])

    run()
    assert seen_kinds == set(COMBINE_KINDS) and seen_layouts == {"contiguous", "transposed", "strided"}
    assert 1 in seen_splits and max(seen_splits) > 16, sorted(seen_splits)


def test_some_empty_leaves_a_split_empty_once_there_are_two():
    # How combine_inputs builds each input's LSEs: with two splits or more, a some_empty column
    # empties each split but the one it keeps with probability 1/2, never all of them; with one, none.
    # (Drawn through Hypothesis, 40 random examples now and then held no such column with an empty
    # split, and the test failed: it asks the builder itself, on fixed seeds.)
    for splits in (2, 3, 8):
        empty = _split_lses(("some_empty",) * 64, splits, torch.Generator().manual_seed(splits)) == -INF
        assert int(empty.any(dim=0).sum()) > 16 and not empty.all(dim=0).any()
    assert not (_split_lses(("some_empty",) * 64, 1, torch.Generator().manual_seed(1)) == -INF).any()

    @settings(FUZZ, max_examples=40)
    @given(combine_inputs(max_tokens=2, max_heads=2, max_dim=2))
    def run(ex):  # and every drawn some_empty column keeps a split
        columns = ex.s.reshape(ex.s.shape[0], -1).t()
        assert all(not bool((lses == -INF).all()) for kind, lses in zip(ex.kinds, columns) if kind == "some_empty")

    run()


def test_the_split_limit_holds_and_shrinks_to_one():
    @settings(FUZZ, max_examples=30)
    @given(combine_inputs(max_splits=2, max_tokens=1, max_heads=1, max_dim=2))
    def run(ex):
        assert 1 <= ex.s.shape[0] <= 2 and ex.v.shape[3] <= 2

    run()


@pytest.mark.parametrize(("options", "message"), [
    ({"max_splits": 0}, "max_splits=0; expected an int >= 1."),
    ({"max_heads": 0}, "max_heads=0; expected an int >= 1."),
    ({"max_tokens": -1}, "max_tokens=-1; expected an int >= 0."),
    ({"base": 10}, "base=10; expected \"e\""),
], ids=["splits", "heads", "tokens", "base"])
def test_bad_strategy_options_are_named(options, message):
    @settings(FUZZ, max_examples=1)
    @given(combine_inputs(**options))
    def run(ex):
        pass

    with pytest.raises(InvalidArgument) as info:
        run()
    assert message in str(info.value)


def test_describe_named_and_clone():
    ex = example(ORDINARY, tokens=1, layout="transposed")
    assert ex.describe() == "v float32 (3, 1, 2, 3): 3 splits, LSEs transposed, base e; states: 2 x given"
    assert list(ex.named()) == ["v", "s"] and ex.named()["s"] is ex.s
    copy = ex.clone()
    assert copy.s.stride() == ex.s.stride() and copy.s.data_ptr() != ex.s.data_ptr()
    assert torch.equal(copy.v, ex.v) and torch.equal(copy.s, ex.s) and copy.kinds == ex.kinds
