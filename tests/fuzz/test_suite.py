"""The fuzz suite as pytest tests: the shipped one passes the project's kernel, and ``lse_suite``
builds it for any implementation, one item per check, failing with the report and no traceback.

``test_lse_suite`` below is the shipped suite itself (``fuzz/pytest_suite/test_lse_fuzz.py``),
collected here against reference.lse; ``pytest tests/fuzz/test_suite.py --lse-impl TARGET``
points it at another implementation.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.checks import CHECKS
from fuzz.pytest_suite.test_lse_fuzz import test_lse_suite  # noqa: F401  (collected: the shipped suite)
from fuzz.suite import ALL, lse_suite
from reference.errors import InvalidArgument

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "implementations"


def test_the_suite_has_one_item_per_check_and_one_for_all_of_them():
    def my_lse(x):
        return x

    suite = lse_suite(my_lse)
    [parametrize] = [mark for mark in suite.pytestmark if mark.name == "parametrize"]
    assert parametrize.args == ("check_name", [*CHECKS, ALL])
    assert any(mark.name == "lse_fuzz" for mark in suite.pytestmark)


BAD_ARGUMENTS = [
    ("an unknown option", dict(target="x.py:lse", budgte=5),
     "lse_suite(budgte=...): not an option; choose from contract, dtypes"),
    ("a target that is no TARGET", dict(target="x.py:not a name"),
     "lse_suite(target)='x.py:not a name': 'not a name' is not a function name."),
    ("isolating a callable", dict(target=len, isolate=True),
     "lse_suite(isolate=True) needs a TARGET string to load in a worker, not <built-in function len>"),
    ("an unknown contract", dict(target="x.py:lse", contract="lenient"), "contract='lenient'"),
    ("an unknown dtype", dict(target="x.py:lse", dtypes="float8"), "float8"),
]


@pytest.mark.parametrize(("arguments", "message"), [case[1:] for case in BAD_ARGUMENTS],
                         ids=[case[0] for case in BAD_ARGUMENTS])
def test_bad_arguments_are_refused_when_the_test_module_is_imported(arguments, message):
    arguments = dict(arguments)
    with pytest.raises(InvalidArgument) as error:
        lse_suite(arguments.pop("target"), **arguments)
    assert message in str(error.value), str(error.value)


MODULE = '''
import torch

from fuzz.suite import lse_suite


def off_by_one(x):
    """Wrong everywhere: one more than the log-sum-exp."""
    return torch.logsumexp(x.double(), dim=1).float() + 1


test_isolated = lse_suite("good.py:lse", isolate=True, contract="finite")   # a TARGET in a worker process
test_broken = lse_suite(off_by_one)                                          # a callable
'''

GOOD = '''
import torch


def lse(x):
    return torch.logsumexp(x.double(), dim=1).to(torch.float32)
'''


def test_a_module_of_suites_passes_the_good_ones_and_reports_the_broken_one(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "test_mine.py").write_text(MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           "--lse-budget", "5", "--lse-seed", "7", "--lse-reproducers", str(tmp_path / "repro"),
                           "test_mine.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    # One more everywhere is what only the checks of the value itself see (a shifted, permuted or
    # repeated input gives an answer one more too).
    failed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED test_mine.py::")}
    assert failed == {f"test_mine.py::test_broken[{check}]" for check in ("agreement", "bounds", ALL)}, failed
    assert f"3 failed, {2 * (len(CHECKS) + 1) - 3} passed" in done.stdout
    # The report, the run's knobs from the command line (seed 7), the replay command; no traceback.
    assert "check 'agreement' failed: row 0 differs from the float64 reference" in done.stdout
    assert "; seed 7" in done.stdout and f"replay:   lse-fuzz replay {tmp_path / 'repro'}" in done.stdout
    assert "Traceback" not in done.stdout and "def test_lse" not in done.stdout


def test_an_implementation_the_cpu_cannot_run_is_skipped_naming_the_construct_not_failed(tmp_path):
    target = HERE / "candidates" / "inline_asm.py"
    (tmp_path / "test_asm.py").write_text(f"from lse_fuzz import lse_suite\n\ntest_asm = lse_suite({f'{target}:lse'!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--rootdir",
                           str(tmp_path), "--lse-budget", "5", "--lse-reproducers", str(tmp_path / "repro"),
                           "test_asm.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr  # nothing failed: the CPU gave no verdict
    assert f"{len(CHECKS) + 1} skipped" in done.stdout and "failed" not in done.stdout
    assert "the kernel uses tl.inline_asm_elementwise" in done.stdout and "run with --device cuda" in done.stdout


OP_MODULE = '''
import functools

import reference
from fuzz.suite import lse_suite

base2 = functools.partial(reference.merge_state, base=2)

test_declared = lse_suite(base2, op="merge_state", lse_base=2)   # passes: its LSEs are base 2, as declared
test_undeclared = lse_suite(base2, op="merge_state")             # fails: read as natural logs
'''


def test_an_op_suite_has_the_ops_checks_and_judges_in_the_declared_base(tmp_path):
    from fuzz.merge import MERGE_CHECKS

    suite = lse_suite(len, op="merge_state")
    [parametrize] = [mark for mark in suite.pytestmark if mark.name == "parametrize"]
    assert parametrize.args == ("check_name", [*MERGE_CHECKS, ALL])
    with pytest.raises(InvalidArgument, match="runs a callable or a TARGET string in the test's process"):
        lse_suite("x.py:merge", op="merge_state", isolate=True)
    (tmp_path / "test_ops.py").write_text(OP_MODULE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           "--lse-budget", "20", "--lse-reproducers", str(tmp_path / "repro"), "test_ops.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = {line.split()[1].split("[")[0] for line in done.stdout.splitlines() if line.startswith("FAILED ")}
    assert failed == {"test_ops.py::test_undeclared"}, done.stdout
    assert "the result agrees with the oracle in base 2: the kernel's LSEs are base 2" in done.stdout
    assert "Traceback" not in done.stdout


def test_the_shipped_suite_takes_the_op_and_the_base_from_the_command_line(tmp_path):
    target = f"{HERE / 'merge_correct' / 'reference_base2.py'}:merge_state"

    def run(*options: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                               "--lse-impl", target, "--lse-op", "merge_state", "--lse-budget", "15",
                               "--lse-reproducers", str(tmp_path / "repro"), *options],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)

    from fuzz.merge import MERGE_CHECKS

    declared = run("--lse-base", "2")
    assert declared.returncode == 0 and f"{len(MERGE_CHECKS) + 1} passed" in declared.stdout, declared.stdout
    undeclared = run()
    assert undeclared.returncode == 1 and "the kernel's LSEs are base 2" in undeclared.stdout, undeclared.stdout
    isolated = run("--lse-isolate")
    assert isolated.returncode != 0 and "drop --lse-isolate" in isolated.stderr + isolated.stdout
