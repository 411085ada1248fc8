"""Each mutant is caught: its minimal input fails its expected check, and fuzzing finds it.

The fuzzing runs here in-process (no worker) with the mutation engine's budget of 250 examples;
a killed mutant stops at its first failure (plus shrinking). ``int32_offsets`` is fuzzed with
``huge_offsets=True``, the inputs that reach 2**31 elements; the fuzzer's default examples stay
far below that. Each counterexample then passes the same checks on the unmutated kernel, so it is
the patch that was caught, not something the launcher or the policy does.
"""

from __future__ import annotations

import importlib

import pytest
import torch

import lse_fuzz
import reference
from fuzz.checks import CheckFailure, run_checks
from fuzz.layouts import Layout
from fuzz.strategies import LseInput, RowSpec
from fuzz.mutation import DEFAULT_BUDGET, catalog, minimal_input
from fuzz.mutation.bundled import kernel_device
from mutants import UNMUTATED_TARGET

MUTANTS = catalog()
BUDGET = 250  # the mutation engine's budget per mutant


def test_the_budget_is_the_engines():
    assert DEFAULT_BUDGET == BUDGET


def _resolve(target: str):
    """What a TARGET string names: ``module:attribute`` through importlib and getattr, as the
    harness's loader does (fuzz's loader is not used here: it is internal to fuzz)."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _example(x: torch.Tensor) -> LseInput:
    """A hand-made input as the checks see it (``values`` holds the same numbers, contiguous)."""
    values = x.detach().cpu().contiguous().clone()
    return LseInput(x=x, values=values, layout=Layout(), specs=(RowSpec("zeros"),), seed=0)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_minimal_input_fails_the_expected_check(name):
    mutant = MUTANTS[name]
    with pytest.raises(CheckFailure) as failure:
        run_checks(mutant.load(), _example(minimal_input(mutant)), checks=[mutant.expected_check])
    assert failure.value.check == mutant.expected_check


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_minimal_input_passes_the_expected_check_without_the_bug(name):
    # The input exposes the bug, not something else: the unmutated kernel, loaded the same way
    # (the empty patch), passes the same check on it.
    mutant = MUTANTS[name]
    run_checks(_resolve(UNMUTATED_TARGET), _example(minimal_input(mutant)), checks=[mutant.expected_check])


@pytest.mark.parametrize("name", list(MUTANTS))
def test_fuzzing_kills_the_mutant(name, tmp_path):
    mutant = MUTANTS[name]
    result = lse_fuzz.check(mutant.load(), budget=BUDGET, seed=0, device=kernel_device(), reproducer_dir=tmp_path,
                            target=mutant.target)  # default options: huge offsets included
    assert result.status is lse_fuzz.Status.FAILED, result.summary()
    on_cpu = kernel_device().type == "cpu"
    assert result.check == (mutant.cpu_check if on_cpu and mutant.cpu_check else mutant.expected_check), \
        result.summary()
    assert f"--impl {mutant.target}" in result.summary() and result.reproducer.exists()
    # The shrunk counterexample, with the same plan, passes every check on the unmutated kernel.
    run_checks(_resolve(UNMUTATED_TARGET), result.counterexample, plan=result.plan)
    if name == "int32_offsets":
        assert result.counterexample.x.storage_offset() >= 2**31


@pytest.mark.parametrize("impl", [reference.lse, UNMUTATED_TARGET], ids=["reference.lse", "unmutated"])
def test_the_correct_kernel_passes_the_fuzzer_with_huge_offsets(impl, tmp_path):
    impl = _resolve(impl) if isinstance(impl, str) else impl
    result = lse_fuzz.check(impl, budget=60, seed=0, device=kernel_device(), reproducer_dir=tmp_path, huge_offsets=True)
    assert result.passed, result.summary()
