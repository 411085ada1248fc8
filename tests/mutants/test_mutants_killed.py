"""Each mutant is caught: its minimal input fails its expected check, and fuzzing finds it.

The fuzzing runs here in-process (no worker) with the harness's default budget; a killed mutant
stops at its first failure. The int32-offset mutant is caught by the huge-offset probe, which
the harness runs after the fuzzer (the fuzzer's default examples stay far below 2**31 elements).
"""

from __future__ import annotations

import pytest
import torch

import fuzz
import reference
from fuzz.checks import CheckFailure, run_checks
from fuzz.layouts import Layout
from fuzz.mutation import DEFAULT_BUDGET
from fuzz.mutation_worker import run_probe
from fuzz.strategies import Contract, LseInput, RowSpec
from mutants import MUTANTS
from mutants._launch import kernel_device, unmutated_lse

FUZZED = [name for name in MUTANTS if name != "int32_offsets"]


def _example(x: torch.Tensor) -> LseInput:
    """A hand-made input as the checks see it (``values`` holds the same numbers, contiguous)."""
    values = x.detach().cpu().contiguous().clone()
    return LseInput(x=x, values=values, layout=Layout(), specs=(RowSpec("zeros"),), seed=0)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_minimal_input_fails_the_expected_check(name):
    mutant = MUTANTS[name]
    with pytest.raises(CheckFailure) as failure:
        run_checks(mutant.load(), _example(mutant.minimal_input()), checks=[mutant.expected_check])
    assert failure.value.check == mutant.expected_check


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_minimal_input_passes_the_expected_check_without_the_bug(name):
    # The input exposes the bug, not something else: the unmutated kernel, launched the same
    # way, passes the same check on it.
    mutant = MUTANTS[name]
    run_checks(unmutated_lse, _example(mutant.minimal_input()), checks=[mutant.expected_check])


@pytest.mark.parametrize("name", FUZZED)
def test_fuzzing_kills_the_mutant(name, tmp_path):
    mutant = MUTANTS[name]
    result = fuzz.check(mutant.load(), budget=DEFAULT_BUDGET, seed=0, device=kernel_device(),
                        reproducer_dir=tmp_path, target=mutant.target)
    assert result.status is fuzz.Status.FAILED, result.summary()
    assert result.check == mutant.expected_check, result.summary()


def test_the_huge_offset_probe_kills_the_int32_mutant(tmp_path):
    mutant = MUTANTS["int32_offsets"]
    failure, example, count, seconds, path = run_probe(
        mutant.load(), checks=tuple(fuzz.CHECKS), device=kernel_device(), contract=Contract.STRICT,
        reproducer_dir=tmp_path, target=mutant.target)
    assert isinstance(failure, CheckFailure) and failure.check == mutant.expected_check
    assert example.x.storage_offset() >= 2**31 and failure.row == 2
    assert path.exists() and mutant.target in failure.replay


@pytest.mark.parametrize("impl", [reference.lse, unmutated_lse], ids=["reference.lse", "unmutated_lse"])
def test_the_correct_kernel_passes_the_fuzzer_and_the_probe(impl, tmp_path):
    result = fuzz.check(impl, budget=60, seed=0, device=kernel_device(), reproducer_dir=tmp_path)
    assert result.passed, result.summary()
    failure, *_ = run_probe(impl, checks=tuple(fuzz.CHECKS), device=kernel_device(), contract=Contract.STRICT,
                            reproducer_dir=tmp_path, target="reference:lse")
    assert failure is None, failure.message()
