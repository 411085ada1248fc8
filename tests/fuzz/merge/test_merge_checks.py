"""The merge checks: the correct merges pass drawn inputs, each broken merge fails the check that
names its bug on an input that shows it, and each metamorphic check fails alone."""

from __future__ import annotations

import math

import pytest
import torch
from doubles import merge as merges
from hypothesis import HealthCheck, given, settings

import reference
from fuzz.merge import MERGE_CHECKS, STATE_KINDS, MergeFailure, MergeInput, merge_inputs, run_merge_checks

INF = math.inf
FUZZ = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def example(s_a, s_b, *, tokens=1, dim=3, layout="contiguous", dtype=torch.float32) -> MergeInput:
    s_a, s_b = (torch.tensor(s, dtype=torch.float32).reshape(tokens, -1) for s in (s_a, s_b))
    gen = torch.Generator().manual_seed(0)
    v_a, v_b = (torch.randn(*s_a.shape, dim, generator=gen).to(dtype) for _ in range(2))
    if layout == "transposed":
        s_a, s_b = (s.t().contiguous().t() for s in (s_a, s_b))
    return MergeInput(v_a, s_a, v_b, s_b, kinds=("given",) * s_a.numel(), layout=layout)


def failure(fn, ex: MergeInput, checks=MERGE_CHECKS) -> MergeFailure:
    with pytest.raises(MergeFailure) as info:
        run_merge_checks(fn, ex, checks=checks)
    return info.value


@pytest.mark.parametrize("fn", [reference.merge_state, merges.correct], ids=["reference", "torch"])
def test_correct_merges_pass_every_check_on_drawn_inputs(fn):
    @FUZZ
    @given(merge_inputs(max_tokens=5, max_heads=3, max_dim=64))
    def run(ex):
        run_merge_checks(fn, ex)

    run()


@pytest.mark.parametrize(("fn", "ex", "check", "text"), [
    (merges.no_empty_guard, example([-INF, 0.0], [-INF, 1.0]), "agreement", "expected 0.0, got nan"),
    (merges.finite_sentinel, example([-INF], [-INF]), "agreement", "expected -inf"),
    (merges.exp2_on_natural_logs, example([0.0, 2.0], [1.0, -3.0]), "agreement", "outside the tolerance"),
    (merges.lse_read_as_contiguous, example([0.0, 5.0, -4.0, 2.0], [3.0, -2.0, 1.0, 0.5], tokens=2,
                                                  layout="transposed"),
     "agreement", "outside the tolerance"),
    (merges.writes_v_a, example([0.0], [1.0]), "inputs_unchanged", "changed v_a"),
    (merges.returns_one_tensor, example([0.0], [1.0]), "output_contract", "expected a pair (v, s)"),
], ids=["no empty guard", "finite sentinel", "exp2 on natural logs", "LSE stride ignored", "writes v_a",
        "one tensor"])
def test_each_broken_merge_fails_the_check_that_names_its_bug(fn, ex, check, text):
    found = failure(fn, ex)
    assert found.check == check and text in str(found), str(found)
    assert "input:    v float32" in str(found)


@pytest.mark.parametrize(("fn", "ex", "check"), [
    (merges.a_is_the_max, example([0.0], [-150.0]), "swap"),  # a is the max here: only merge(b, a) overflows
    (merges.empty_lse_as_zero, example([2.0], [1.0]), "empty_identity"),  # no empty state drawn
    (merges.no_max_shift, example([86.0], [85.0]), "shift"),  # exp(89) overflows only after the shift
], ids=["swap", "empty identity", "shift"])
def test_each_metamorphic_check_fails_alone_on_a_bug_agreement_misses_there(fn, ex, check):
    run_merge_checks(fn, ex, checks=("agreement",))  # the drawn call itself is right
    assert failure(fn, ex, checks=(check,)).check == check


def test_drawn_inputs_cover_every_state_kind_and_layout():
    seen_kinds, seen_layouts = set(), set()

    @FUZZ
    @given(merge_inputs(max_tokens=4, max_heads=3, max_dim=8))
    def run(ex):
        seen_kinds.update(ex.kinds)
        seen_layouts.add(ex.layout)
        both = [k == "both_empty" for k in ex.kinds]
        flat_a, flat_b = ex.s_a.reshape(-1), ex.s_b.reshape(-1)
        assert all(bool(torch.isinf(flat_a[i]) and torch.isinf(flat_b[i])) for i, b in enumerate(both) if b)
        if ex.layout == "transposed" and ex.s_a.shape[0] > 1 and ex.s_a.shape[1] > 1:
            assert ex.s_a.stride() == (1, ex.s_a.shape[0])

    run()
    assert seen_kinds == set(STATE_KINDS) and seen_layouts == {"contiguous", "transposed", "strided"}
