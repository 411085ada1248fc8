"""The backward's mutants (``mutants.BACKWARD_NAMES``): each patch applies once to today's backward
kernel, its minimal input fails its expected gradient check and passes it without the bug, and
fuzzing with ``--backward`` kills it by that check (in-process, the engine's budget)."""

from __future__ import annotations

import importlib

import pytest

import fuzz
import lse_fuzz
import mutants
import mutants.patched
from fuzz.checks import CheckFailure, Plan, run_checks
from fuzz.gradient import gradient_of
from fuzz.layouts import Layout
from fuzz.mutation.bundled import kernel_device
from fuzz.mutation.patch import Patch, apply, load
from fuzz.strategies import LseInput, RowSpec

BUDGET = 250


def _data(name: str):
    return importlib.import_module(f"mutants.{name}")


def _example(x) -> LseInput:
    values = x.detach().cpu().contiguous().clone()
    return LseInput(x=x, values=values, layout=Layout(), specs=(RowSpec("small"),), seed=0)


def _judge(impl, x, check: str) -> None:
    run_checks(impl, _example(x), checks=[check], plan=Plan(None, 0), gradient_impl=gradient_of(impl))


@pytest.mark.parametrize("name", mutants.BACKWARD_NAMES)
def test_each_is_one_edit_of_the_backward_kernel_judged_with_backward(name):
    data = _data(name)
    assert data.PATH == "reference/_lse_backward_kernel.py" and data.BACKWARD and data.FUNCTION == "lse_autograd"
    assert data.EXPECTED_CHECK in fuzz.checks.GRADIENT_CHECKS
    texts = apply(Patch(data.PATH, data.ANCHOR, data.REPLACEMENT), name=name)
    assert data.REPLACEMENT in texts[data.PATH]
    assert data.__doc__.startswith("Backward mutant: ") and "\nKilled by: " in data.__doc__


@pytest.mark.parametrize("name", mutants.BACKWARD_NAMES)
def test_the_minimal_input_fails_the_expected_check_and_passes_without_the_bug(name):
    data = _data(name)
    impl = getattr(mutants.patched, name)
    with pytest.raises(CheckFailure) as failure:
        _judge(impl, data.minimal_input(kernel_device()), data.EXPECTED_CHECK)
    assert failure.value.check == data.EXPECTED_CHECK
    _judge(load(None).lse_autograd, data.minimal_input(kernel_device()), data.EXPECTED_CHECK)


@pytest.mark.slow
@pytest.mark.parametrize("name", mutants.BACKWARD_NAMES)
def test_fuzzing_with_backward_kills_it(name, tmp_path):
    data = _data(name)
    result = lse_fuzz.check(getattr(mutants.patched, name), budget=BUDGET, seed=0, device=kernel_device(),
                            reproducer_dir=tmp_path, target=f"mutants.patched:{name}", backward=True)
    assert result.status is lse_fuzz.Status.FAILED and result.check == data.EXPECTED_CHECK, result.summary()


@pytest.mark.slow
def test_the_unmutated_backward_passes_the_same_fuzzing(tmp_path):
    result = lse_fuzz.check(load(None).lse_autograd, budget=BUDGET, seed=0, device=kernel_device(),
                            reproducer_dir=tmp_path, backward=True)
    assert result.passed, result.summary()
