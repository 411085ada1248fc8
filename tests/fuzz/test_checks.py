"""Every check fails on a double built to break it, with a message a person can act on, and
correct implementations written differently pass every check on the hard cases.

These tests use hand-built inputs (no Hypothesis) so each failure is immediate and exact;
tests/fuzz/test_runner.py shows the same doubles are found by fuzzing.
"""

from __future__ import annotations

import math

import doubles
import pytest
import torch
from doubles import exp2, lanes, reads_past, reads_unwritten, two_pass

import reference
from fuzz.checks import CHECKS, METAMORPHIC, CheckFailure, ImplError, Plan, run_checks, validate_checks
from fuzz.interpreter import bounds
from reference._device import interpreting
from fuzz.layouts import Layout, LayoutKind
from fuzz.strategies import LseInput, RowSpec
from reference.errors import InvalidArgument

INF = math.inf
if interpreting():
    bounds.install()  # as every run on the CPU does (fuzz.interpreter.repairs): memory_bounds judges the calls


def example(values, layout: Layout = Layout(), recipe: str = "small") -> LseInput:
    values = torch.as_tensor(values, dtype=torch.float32) if not isinstance(values, torch.Tensor) else values
    return LseInput(x=layout.materialize(values), values=values, layout=layout, specs=(RowSpec(recipe),), seed=0)


def failure_of(impl, ex: LseInput, check: str, seed: int = 0) -> CheckFailure:
    plan = Plan(check if check in METAMORPHIC else None, seed)
    with pytest.raises(CheckFailure) as info:
        run_checks(impl, ex, checks=[check], plan=plan)
    assert info.value.check == check
    return info.value


def passes(impl, ex: LseInput, check: str, seed: int = 0) -> bool:
    try:
        run_checks(impl, ex, checks=[check], plan=Plan(check if check in METAMORPHIC else None, seed))
    except CheckFailure:
        return False
    return True


# One double and one input per check, with text its message must contain. Where a double breaks
# several properties at once (forgetting the max breaks agreement, bounds and shift alike), the
# case runs its check alone, the way the mutation harness builds its kill matrix.
CASES = {
    "output_contract": (doubles.float64_output, lambda: example(torch.randn(3, 5)),
                        ["returned dtype torch.float64, expected torch.float32"]),
    "input_unchanged": (doubles.negates_input, lambda: example([[1.0, 2.0], [3.0, 4.0]]),
                        ["changed the input at x[0, 0]", "before:   0x3f800000 (1.0)", "after:    0xbf800000 (-1.0)"]),
    "agreement": (doubles.nan_for_neg_inf_rows, lambda: example([[0.0, 1.0], [-INF, -INF]]),
                  ["row 1 differs from the float64 reference", "expected: -inf", "got:      nan",
                   "a non-finite result must match exactly", "rows:     1 of 2 rows fail"]),
    "bounds": (doubles.off_by_max, lambda: example([[100.0, 100.0]]),
               ["row 0 lies outside [max, max + log N] = [100.0, 100.69314718055995]", "got:      0.6931471"]),
    "determinism": (doubles.alternates_rounding, lambda: example(torch.randn(4, 3000) * 30),
                    ["two calls on the same input returned different bits in row", "first:    0x", "second:   0x"]),
    "shift_invariance": (doubles.off_by_max, lambda: example([[0.0]], recipe="zeros"),
                         ["row 0: lse(x + c) != lse(x) + c", "c = 1.0 added to every entry of row 0",
                          "expected: 1.0", "got:      0.0"]),
    "permutation_invariance": (doubles.first_entry_shift, lambda: example([[0.0, 200.0]]),
                               ["lse of a permuted row differs", "first call:  inf", "second call: 200.0"]),
    "row_independence": (doubles.batch_max_shift, lambda: example([[0.0, 0.0]] + [[-200.0, -200.0]] * 7),
                         ["alone give a different answer than inside the batch", "first call:  -inf"]),
    "fresh_values": (doubles.caches_by_object, lambda: example(torch.randn(3, 4)),
                     ["the answer after new values were written into the same input tensor is wrong",
                      "bit for bit the ones returned for the previous contents: a stale cached result?"]),
    "memory_bounds": (reads_past.lse, lambda: example(torch.randn(3, 5)),
                      ["load out of bounds during the first call",
                       "access:   x_ptr[15]: 1 element past the end of a 15-element tensor (3 lanes out of bounds",
                       "kernel:   _reads_past_kernel at reads_past.py:", "program:  (2, 0, 0)"]),
    "uninitialized_read": (reads_unwritten.lse, lambda: example([[0.0, 1.0], [-math.inf, -math.inf]]),
                           ["load of memory nothing wrote during the first call",
                            "access:   scratch_ptr[1]: never written since torch.empty at reads_unwritten.py:",
                            "kernel:   _reads_unwritten_kernel at reads_unwritten.py:", "program:  (1, 0, 0)"]),
}


def test_every_check_has_a_double():
    assert set(CASES) == set(CHECKS)


def test_check_names_are_the_documented_ones():
    assert list(CHECKS) == ["output_contract", "input_unchanged", "agreement", "bounds", "memory_bounds",
                            "uninitialized_read", "determinism", "shift_invariance", "permutation_invariance", "row_independence",
                            "fresh_values"]
    assert all(CHECKS[name].summary and CHECKS[name].why for name in CHECKS)


@pytest.mark.parametrize("check", CASES)
def test_the_double_fails_its_check_with_an_actionable_message(check):
    impl, make, texts = CASES[check]
    # row_independence picks the rows it passes alone from the plan's seed; it needs a pick that
    # leaves out row 0 (the batch max), which seed 1 does.
    failure = failure_of(impl, make(), check, seed=1 if check == "row_independence" else 0)
    message = failure.message()
    assert message.startswith(f"check {check!r} failed: ")
    assert "  input:    float32 " in message
    assert f"  why it matters: {CHECKS[check].why}" in message
    for text in texts:
        assert text in message, f"{text!r} not in:\n{message}"


# Doubles whose single defect only one check can see: every other check passes on the input
# that exposes them.
ONLY = {
    "output_contract": doubles.float64_output,
    "input_unchanged": doubles.canonicalizes_zeros,
    "agreement": doubles.nan_for_neg_inf_rows,
    "determinism": doubles.alternates_rounding,
    "fresh_values": doubles.caches_by_object,
    "memory_bounds": reads_past.lse,
}
ONLY_INPUTS = {
    "input_unchanged": lambda: example(torch.tensor([[-0.0, 1.0], [2.0, -0.0]])),
}


@pytest.mark.parametrize("check", ONLY)
def test_exactly_that_check_fails(check):
    impl = ONLY[check]
    make = ONLY_INPUTS.get(check, CASES[check][1])
    failing = [name for name in CHECKS if not passes(impl, make(), name)]
    assert failing == [check]


@pytest.mark.parametrize("impl", [doubles.returns_input_column, doubles.column_output, doubles.meta_device_output],
                         ids=lambda f: f.__name__)
def test_output_contract_names_the_broken_clause(impl):
    text = {
        "returns_input_column": "the output shares memory with the input",
        "column_output": "returned shape (3, 1), expected (3,): one value per row",
        "meta_device_output": "returned a tensor on meta, but the input is on cpu",
    }[impl.__name__]
    assert text in failure_of(impl, example(torch.randn(3, 5)), "output_contract").message()


def test_input_unchanged_compares_bits_so_a_signed_zero_counts():
    ex = example(torch.tensor([[1.0, -0.0]]))
    message = failure_of(doubles.canonicalizes_zeros, ex, "input_unchanged").message()
    assert "x[0, 1]" in message and "0x80000000 (-0.0)" in message and "0x00000000 (0.0)" in message


def test_input_unchanged_sees_writes_into_padding():
    ex = example(torch.randn(3, 4), Layout(LayoutKind.PADDED, pad=2))
    message = failure_of(doubles.writes_padding, ex, "input_unchanged").message()
    assert "wrote into the input's storage outside the view, at storage element 4" in message


def test_input_unchanged_keeps_nan_payloads():
    values = torch.tensor([[float("nan"), 1.0]])
    values.view(torch.int32)[0, 0] = 0x7FC00123

    def quiets_nan(x):
        out = doubles.lse_float64(x)
        x.nan_to_num_(nan=float("nan"))  # rewrites NaN with the canonical payload
        return out

    assert "0x7fc00123" in failure_of(quiets_nan, example(values), "input_unchanged").message()


def test_metamorphic_checks_allow_both_sides_their_tolerance():
    # Off by just under one tolerance on the first call and the other way on the second: each
    # output alone is right, so the pair must pass.
    values = torch.randn(4, 100) * 10
    ex = example(values)
    bound = reference.compare(values, reference.lse(values)).bound
    calls = []

    def wobbly(x):
        exact = reference.lse_reference(x)
        out = (exact + (0.9 if len(calls) % 2 == 0 else -0.9) * reference.compare(x, exact.float()).bound).float()
        calls.append(x)
        return out

    assert bound.min() > 0
    for check in ["shift_invariance", "permutation_invariance", "row_independence"]:
        calls.clear()
        assert passes(wobbly, ex, check), check


def test_an_error_raised_by_the_implementation_is_not_a_check_failure():
    with pytest.raises(ImplError) as info:
        run_checks(doubles.raises_on_long_rows, example(torch.zeros(1, 5)))
    assert info.value.exc_type == "RuntimeError"
    assert "row too long: 5 > 4" in info.value.message()
    assert "during the first call" in str(info.value)


HARD_INPUTS = {
    "neg_inf_rows": [[-INF, -INF, -INF], [-INF, 0.0, -INF], [1.0, 2.0, 3.0]],
    "pos_inf_and_nan": [[INF, -INF, 0.0], [float("nan"), INF, 1.0], [INF, INF, INF]],
    "dominant": [[0.0, -30.0, -30.0], [88.0, 88.5, 89.0], [-1e30, -1e30, -1e30]],
    "near_max": [[3e38, 3e38, -3e38], [1e-45, -1e-45, 0.0], [-0.0, 0.0, 0.0]],
}
CORRECT = {**doubles.CORRECT, "reference": reference.lse, "two_pass": two_pass.lse, "exp2": exp2.lse,
           "lanes": lanes.lse}


@pytest.mark.parametrize("values", HARD_INPUTS)
@pytest.mark.parametrize("impl", CORRECT)
@pytest.mark.parametrize("layout", [Layout(), Layout(LayoutKind.TRANSPOSED, pad=1), Layout(LayoutKind.COLUMN_STEP, step=2)],
                         ids=lambda layout: layout.kind.value)
def test_correct_implementations_pass_every_check_on_hard_rows(impl, values, layout):
    ex = example(HARD_INPUTS[values], layout)
    for check in CHECKS:
        run_checks(CORRECT[impl], ex, checks=[check], plan=Plan(check if check in METAMORPHIC else None, 3))


def test_validate_checks_keeps_registry_order_and_names_unknown_ones():
    assert validate_checks(["bounds", "agreement"]) == ("agreement", "bounds")
    assert validate_checks("determinism") == ("determinism",)
    with pytest.raises(InvalidArgument, match="checks=\\['agreemnt'\\]: unknown 'agreemnt'; choose from output_contract"):
        validate_checks(["agreemnt"])
    with pytest.raises(InvalidArgument, match="checks=\\[\\]: empty"):
        validate_checks([])


def test_failure_to_dict_is_plain_data():
    failure = failure_of(doubles.nan_for_neg_inf_rows, CASES["agreement"][1](), "agreement")
    data = failure.to_dict()
    assert data["check"] == "agreement" and data["row"] == 1
    assert data["expected"] == "-inf" and data["got"] == "nan"


# --------------------------------------------------------------------------------------------
# Outputs narrower than the input, judged in their own dtype


def torch_native(x):
    """torch.logsumexp in the input's dtype: it rounds the max and log(sum) to a half dtype."""
    return torch.logsumexp(x, dim=1)


def float32_of_float64(x):
    """A correct float32 result for any input: beyond float32's range that is +-inf."""
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)


def truncated_bfloat16(x):
    """A correct result whose final rounding to bfloat16 is toward zero, as Triton's interpreter casts."""
    exact = torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
    return (exact.contiguous().view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)


NARROW = {
    "float64 near its max, float32 out": (float32_of_float64, torch.tensor(
        [[1.47e308, 1.0e308], [3.0e38, 3.2e38], [3.4028234e38, -1.0], [-1.7e308, -1.8e308]], dtype=torch.float64)),
    "float16 cancellation, float16 out": (torch_native, torch.full((3, 1000), -math.log(1000.0)).to(torch.float16)),
    "bfloat16 with a large max, bfloat16 out": (torch_native, (torch.randn(4, 300) * 3 - 1e3).to(torch.bfloat16)),
    "bfloat16 rounded toward zero": (truncated_bfloat16, torch.tensor(
        [[-9984.0, -float("inf"), -9984.0], [12.0, 11.9375, -3.0], [0.5, 0.25, 0.125]], dtype=torch.bfloat16)),
}


@pytest.mark.parametrize("case", NARROW)
@pytest.mark.parametrize("check", CHECKS)
def test_a_correct_narrow_output_passes_every_check(case, check):
    impl, values = NARROW[case]
    ex = LseInput(x=values.clone(), values=values.clone(), layout=Layout(), specs=(RowSpec("near_limit"),), seed=0)
    run_checks(impl, ex, checks=[check], plan=Plan(check if check in METAMORPHIC else None, 5))


def test_a_finite_answer_where_only_inf_is_right_is_caught_in_ulps_and_allowances():
    values = torch.tensor([[1.47e308, 1.0e308]], dtype=torch.float64)
    message = failure_of(lambda x: torch.full((1,), 3.4e38), example(values), "agreement").message()
    assert "lies beyond float32's range: only inf is right" in message


def test_the_error_is_given_in_ulps_and_multiples_of_the_allowance():
    values = torch.randn(2, 100)
    off = failure_of(lambda x: torch.logsumexp(x, dim=1) + 1e-3, example(values), "agreement")
    assert off.ulps > 1000 and off.ratio > 10 and off.out_dtype == "float32"
    assert "ulps of float32" in off.message() and "x the allowance" in off.message()
    assert off.to_dict()["ulps"] == off.ulps and off.to_dict()["ratio"] == off.ratio


@pytest.mark.parametrize("dtype, big", [(torch.float32, 1e30), (torch.float16, 6e4), (torch.bfloat16, 3e38),
                                        (torch.float64, 1e300)], ids=str)
def test_fresh_values_sees_a_stale_answer_on_rows_of_large_magnitude(dtype, big):
    # A shift of 1-3 is lost in rounding on such rows (1e30 + 3 == 1e30 in float32): the fresh
    # values would equal the old ones and a cached answer would pass. One row: no permutation of
    # the rows to give the stale answer away.
    for row in ([big, -big / 2], [torch.finfo(dtype).max] * 2):
        message = failure_of(doubles.caches_by_object, example(torch.tensor([row], dtype=dtype)),
                             "fresh_values").message()
        assert "a stale cached result?" in message
