"""The op runner (``lse_fuzz.check(fn, op="merge_state")``): verdicts, shrinking, the reproducer and
its replay, the declared LSE base, and one clear InvalidArgument for every bad input."""

from __future__ import annotations

import functools

import pytest
import torch
from doubles import merge as merges

import lse_fuzz
import reference
from fuzz.merge import OpResult, check_op, replay_op
from fuzz.merge.reproducer import load_op_reproducer
from fuzz.outcomes import Status
from reference.errors import InvalidArgument

BASE2 = functools.partial(reference.merge_state, base=2)


def run(fn, tmp_path, **options) -> OpResult:
    return check_op(fn, reproducer_dir=tmp_path, **{"budget": 60, **options})


@pytest.mark.parametrize(("fn", "budget"), [(merges.correct, 60), (reference.merge_state, 25)], ids=["torch", "triton"])
def test_correct_merges_pass(fn, budget, tmp_path):
    result = run(fn, tmp_path, budget=budget)
    assert result.passed and result.status is Status.PASSED and result.examples == budget, result.summary()
    assert result.summary().startswith("PASS ") and result.reproducer is None


@pytest.mark.parametrize(("fn", "check"), [
    (merges.no_empty_guard, {"agreement", "swap", "empty_identity"}),
    (merges.finite_sentinel, {"agreement", "swap", "empty_identity"}),
    (merges.exp2_on_natural_logs, {"agreement"}),
    (merges.lse_read_as_contiguous, {"agreement", "swap", "shift", "empty_identity"}),
    (merges.writes_v_a, {"inputs_unchanged"}),
], ids=["no empty guard", "finite sentinel", "exp2", "LSE stride", "writes v_a"])
def test_broken_merges_fail_with_a_shrunk_counterexample_and_a_replay(fn, check, tmp_path):
    result = run(fn, tmp_path)
    assert result.status is Status.FAILED and result.check in check, result.summary()
    tokens, heads, dim = result.counterexample.v_a.shape
    assert tokens * heads <= 2 and dim == 1, result.counterexample.describe()  # shrunk
    text = result.summary()
    assert text.startswith("FAIL ") and f"check {result.check!r} failed" in text and "replay:   lse-fuzz replay" in text
    again = replay_op(result.reproducer, fn)
    assert again.status is Status.FAILED and again.check == result.check
    assert replay_op(result.reproducer, reference.merge_state).passed  # the input is right; the merge is not


def test_the_reproducer_keeps_the_lse_tensors_strides(tmp_path):
    result = run(merges.lse_read_as_contiguous, tmp_path)
    saved = load_op_reproducer(result.reproducer).example("cpu")
    for name, tensor in result.counterexample.named().items():
        again = saved.named()[name]
        assert again.stride() == tensor.stride() and torch.equal(again, tensor), name
    assert not saved.s_a.is_contiguous()


def test_a_raising_merge_is_an_error_with_its_traceback(tmp_path):
    def raises(v_a, s_a, v_b, s_b):
        if s_a.numel() == 0:
            raise RuntimeError("no tokens")
        return merges.correct(v_a, s_a, v_b, s_b)

    result = run(raises, tmp_path)
    assert result.status is Status.ERROR and result.check is None
    text = result.summary()
    assert text.startswith("ERROR ") and "RuntimeError raised by the implementation during merge(a, b): no tokens" in text
    assert "traceback:" in text and "replay:" in text


def test_the_declared_base_decides_and_the_failure_names_the_other():
    assert check_op(BASE2, budget=15, lse_base=2).passed
    assert check_op(BASE2, budget=5, lse_base="2").passed  # as the command line gives it
    wrong = check_op(BASE2, budget=40)
    assert wrong.check in ("agreement", "swap", "shift")
    assert "LSEs declared base e: --lse-base e); the result agrees with the oracle in base 2" in str(wrong.failure)
    mixed = check_op(merges.exp2_on_natural_logs, budget=40, lse_base="e")
    assert mixed.check == "agreement" and "declared base e" in str(mixed.failure)
    assert "agrees with the oracle in base 2" not in str(mixed.failure)  # it mixes: neither base fits


def test_the_same_seed_gives_the_same_result(tmp_path):
    first, second = (run(merges.exp2_on_natural_logs, tmp_path, seed=3) for _ in range(2))
    assert first.reproducer == second.reproducer and first.examples == second.examples


def test_an_ops_examples_are_drawn_without_the_processs_local_constants(tmp_path, monkeypatch):
    """The op's Hypothesis test runs inside fuzz.stream.own_stream (tests/fuzz/test_stream.py shows
    what that keeps out): every example is drawn while the pool is emptied."""
    from hypothesis.control import currently_in_test_context
    from hypothesis.internal.conjecture import providers

    from fuzz.merge import runner
    from fuzz.stream import own_stream

    inside, empty = [], []

    def merge(*args, **kwargs):
        if currently_in_test_context():  # an example's call (the op's probe before the run is none)
            empty.append(not providers._get_local_constants().set_for_type("integer"))
        return merges.correct(*args, **kwargs)

    monkeypatch.setattr(runner, "own_stream", lambda: (inside.append(True), own_stream())[1])
    result = run(merge, tmp_path, budget=10)
    assert result.passed and inside and len(empty) >= 10 and all(empty), result.summary()


def test_lse_fuzz_check_and_replay_dispatch_on_the_op(tmp_path):
    result = lse_fuzz.check(merges.finite_sentinel, op="merge_state", budget=40, reproducer_dir=tmp_path)
    assert isinstance(result, OpResult) and not result.passed
    assert lse_fuzz.replay(result.reproducer, merges.finite_sentinel).check == result.check


@pytest.mark.parametrize(("call", "message"), [
    (lambda: check_op(reference.lse), "its signature does not take 4 tensors"),
    (lambda: check_op(lambda v_a, s_a, v_b, s_b: v_a), "returned Tensor on an ordinary input, not a pair"),
    (lambda: check_op(lambda v_a, s_a, v_b, s_b: (v_a, s_a.double())), "dtype float64, expected (2, 3) and float32"),
    (lambda: check_op(lambda v_a, s_a, v_b, s_b: (v_a[:, :1], s_a)), "shape (2, 1, 8)"),
    (lambda: check_op(merges.correct, op="merge"), "op='merge'; choose lse"),
    (lambda: check_op(merges.correct, lse_base=10), "lse_base=10; choose e"),
    (lambda: check_op(merges.correct, dtypes="float64"), "an op's v is one of float32, float16, bfloat16"),
    (lambda: check_op(merges.correct, checks="agreement,monotone"), "has the checks output_contract"),
    (lambda: check_op(merges.correct, budget=0), "budget=0"),
    (lambda: lse_fuzz.check(merges.correct, op="merge_state", contract="finite"), "contract=...: options of the row LSE"),
], ids=["signature", "one tensor", "s dtype", "v shape", "op", "base", "dtypes", "checks", "budget", "row option"])
def test_bad_input_is_one_invalid_argument(call, message):
    with pytest.raises(InvalidArgument, match=None) as info:
        call()
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_selected_checks_and_dtypes_are_what_runs(tmp_path):
    seen = set()

    def spy(v_a, s_a, v_b, s_b):
        seen.add(v_a.dtype)
        return merges.correct(v_a, s_a, v_b, s_b)

    result = run(spy, tmp_path, dtypes="bfloat16", checks="agreement")
    assert result.passed and result.checks == ("agreement",) and seen == {torch.bfloat16, torch.float32}  # + the probe
    assert run(merges.writes_v_a, tmp_path, checks="agreement").passed  # inputs_unchanged not selected


def test_drawn_d_stays_within_max_dim():
    from hypothesis import given, settings

    from fuzz.merge import merge_inputs

    @settings(max_examples=80, deadline=None, database=None)
    @given(merge_inputs(max_tokens=2, max_heads=2, max_dim=12))
    def run(ex):
        assert 1 <= ex.v_a.shape[2] <= 12

    run()


def test_the_combine_op_passes_the_correct_kernels_and_names_a_broken_ones_check(tmp_path):
    from doubles import combine as combines

    assert check_op(combines.correct, op="combine", budget=60, reproducer_dir=tmp_path).passed
    assert check_op(functools.partial(reference.combine, base=2), op="combine", budget=6, lse_base=2).passed
    broken = check_op(combines.not_renormalized, op="combine", budget=60, reproducer_dir=tmp_path)
    assert broken.check == "agreement" and broken.counterexample.v.shape[1:] == (1, 1, 1), broken.summary()
    assert replay_op(broken.reproducer, combines.not_renormalized).check == "agreement"
    assert replay_op(broken.reproducer, combines.correct).passed
    with pytest.raises(InvalidArgument, match="--op combine calls combine"):
        check_op(merges.correct, op="combine")


def test_a_contiguous_only_kernel_declares_it_and_gets_contiguous_inputs(tmp_path):
    seen = set()

    def contiguous_only(v_a, s_a, v_b, s_b):
        seen.update(t.is_contiguous() for t in (v_a, s_a, v_b, s_b))
        return merges.lse_read_as_contiguous(v_a, s_a, v_b, s_b)

    assert check_op(contiguous_only, layouts="contiguous", budget=60, reproducer_dir=tmp_path).passed
    assert seen == {True}
    assert not check_op(contiguous_only, budget=60, reproducer_dir=tmp_path).passed  # any layouts: found
    with pytest.raises(InvalidArgument, match="layouts='rows'; an op's kernel takes any layouts"):
        check_op(merges.correct, layouts="rows")
