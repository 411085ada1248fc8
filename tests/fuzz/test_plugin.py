"""The pytest plugin runs the suite against the project's kernel by default and against any
implementation named with --lse-impl (a file path or a module), reporting failures with their
replay command and refusing a bad target with a one-line usage error. With --lse-impl and no test
paths it collects the shipped suite; without --lse-impl it adds nothing and prints nothing."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.checks import CHECKS

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parents[1] / "implementations"

SUITE = '''
import pytest

@pytest.mark.parametrize("check", ["agreement", "shift_invariance"])
def test_check(lse_fuzz, check):
    result = lse_fuzz(checks=[check])
    assert result.passed, result.summary()
'''

BROKEN = '''
import torch

def lse(x):
    """Forgets to add the row max back (rows with no columns are right: -inf)."""
    if x.shape[1] == 0:
        return torch.full(x.shape[:1], -torch.inf)
    values = x.double()
    row_max = values.amax(dim=1, keepdim=True).nan_to_num(0.0, 0.0, 0.0)
    return torch.log(torch.exp(values - row_max).sum(dim=1)).float()
'''


def _installed() -> bool:
    return any(ep.name == "lse_fuzz" for ep in importlib.metadata.entry_points(group="pytest11"))


def pytest_run(tmp_path: Path, *args: str, suite: str = SUITE, name_it: bool = True) -> subprocess.CompletedProcess:
    """pytest in ``tmp_path`` with ``suite`` as test_lse.py, named on the command line unless not ``name_it``."""
    (tmp_path / "test_lse.py").write_text(suite)
    plugin = [] if _installed() else ["-p", "lse_fuzz.plugin"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
               "--rootdir", str(tmp_path), "--lse-budget", "10",
               "--lse-reproducers", str(tmp_path / "repro"), *args, *([str(tmp_path / "test_lse.py")] * name_it)]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_the_default_implementation_is_the_projects_kernel(tmp_path):
    suite = "import reference\n\ndef test_default(lse_impl):\n    assert lse_impl is reference.lse\n"
    done = pytest_run(tmp_path, "-v", suite=suite)
    assert done.returncode == 0, done.stdout + done.stderr


UNRELATED = "def test_unrelated():\n    assert 1 + 1 == 2\n"


def test_without_lse_impl_it_adds_no_test_and_prints_nothing(tmp_path):
    """Installed in someone's environment, a run of their tests looks as if lse-fuzz were absent."""
    done = pytest_run(tmp_path, "-v", suite=UNRELATED, name_it=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "test_lse_suite" not in done.stdout
    assert "lse-fuzz:" not in done.stdout + done.stderr  # no report header line (pytest lists it among plugins)


def suite_items(check_names) -> list[str]:
    return [f"test_lse_fuzz.py::test_lse_suite[{name}]" for name in [*check_names, "all"]]


@pytest.mark.parametrize("options", [(), ("-o", "python_files=check_*.py")], ids=["default", "custom python_files"])
def test_lse_impl_without_test_paths_collects_the_suite_one_item_per_check(tmp_path, options):
    done = pytest_run(tmp_path, "--collect-only", "--lse-impl", "doubles:lse_float64", *options, suite=UNRELATED,
                      name_it=False)
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected[-len(CHECKS) - 1:] == suite_items(CHECKS)
    assert ("test_lse.py::test_unrelated" in collected) == (options == ())  # beside what pytest collects anyway


def test_the_shipped_suite_fails_a_broken_implementation_item_by_item(tmp_path):
    (tmp_path / "broken_lse.py").write_text(BROKEN)
    done = pytest_run(tmp_path, "--lse-impl", "broken_lse.py:lse", suite=UNRELATED, name_it=False)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED test_lse_fuzz.py::")}
    assert failed == set(suite_items(["agreement", "bounds", "shift_invariance", "fresh_values"])), failed
    assert "check 'shift_invariance' failed" in done.stdout and "Traceback" not in done.stdout
    assert f"lse-fuzz replay {tmp_path / 'repro'}" in done.stdout and "--impl broken_lse.py:lse" in done.stdout


def test_a_correct_module_target_passes(tmp_path):
    done = pytest_run(tmp_path, "--lse-impl", "doubles:lse_float64")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_a_file_target_is_fuzzed_and_its_failure_explained(tmp_path):
    (tmp_path / "broken_lse.py").write_text(BROKEN)
    done = pytest_run(tmp_path, "--lse-impl", f"{tmp_path / 'broken_lse.py'}:lse")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "check 'agreement' failed" in done.stdout
    assert "check 'shift_invariance' failed" in done.stdout
    assert f"lse-fuzz replay {tmp_path / 'repro'}" in done.stdout
    assert f"--impl {tmp_path / 'broken_lse.py'}:lse" in done.stdout


SEGFAULT = """
import ctypes

def lse(x):
    ctypes.string_at(0)  # reads address 0: SIGSEGV
"""


def test_isolate_turns_a_crash_into_failed_tests(tmp_path):
    """Without --lse-isolate a segfault ends the pytest run; with it each test fails on its own,
    the second one in a fresh worker."""
    (tmp_path / "crash_lse.py").write_text(SEGFAULT)
    done = pytest_run(tmp_path, "--lse-isolate", "--lse-impl", f"{tmp_path / 'crash_lse.py'}:lse")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed" in done.stdout
    assert done.stdout.count("ImplLost") >= 2
    assert "segmentation fault" in done.stdout.lower() or "SIGSEGV" in done.stdout


def test_isolate_passes_a_correct_implementation(tmp_path):
    done = pytest_run(tmp_path, "--lse-isolate", "--lse-impl", "doubles:lse_float64")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_a_module_target_and_the_header(tmp_path):
    done = pytest_run(tmp_path, "-v", "--lse-impl", "doubles:off_by_max", "--lse-contract", "finite")
    assert done.returncode == 1
    assert "lse-fuzz: impl doubles:off_by_max, contract finite" in done.stdout


@pytest.mark.parametrize(("target", "text"), [
    ("no_colon", "cannot import 'no_colon'"),  # a module name alone: its function defaults to lse
    ("missing.py:lse", "no such file"),
    ("doubles:not_there", "has no attribute 'not_there'"),
])
def test_a_bad_target_is_a_usage_error(tmp_path, target, text):
    done = pytest_run(tmp_path, "--lse-impl", target)
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.startswith(f"ERROR: --lse-impl={target!r}: ") and text in done.stderr


@pytest.mark.parametrize(("declared", "outcome"), [((), "1 failed"), (("--lse-layouts", "contiguous"), "1 passed")],
                         ids=["any layouts", "contiguous declared"])
def test_the_shipped_suite_checks_the_contract_declared_on_the_command_line(tmp_path, declared, outcome):
    """A kernel that assumes contiguous rows fails on strided inputs, and passes once it declares so."""
    done = pytest_run(tmp_path, "--lse-impl", "doubles:hardcoded_row_stride", "-k", "agreement", *declared,
                      suite=UNRELATED, name_it=False)
    assert f"{outcome}, {len(CHECKS) + 1} deselected" in done.stdout, done.stdout + done.stderr  # and test_unrelated


ND_OPTIONS = ("--lse-ndim", "3", "--lse-dim", "1", "--lse-call-args", "x,dim,keepdim")


def test_the_call_convention_options_declare_how_an_nd_implementation_is_called(tmp_path):
    correct = str(HERE / "correct" / "nd_torch_dim.py")
    done = pytest_run(tmp_path, "--lse-impl", correct, *ND_OPTIONS)
    assert done.returncode == 0, done.stdout + done.stderr
    done = pytest_run(tmp_path, "--lse-impl", "nd_buggy:ignores_batch_stride", *ND_OPTIONS)
    assert done.returncode == 1 and "check 'agreement' failed" in done.stdout, done.stdout + done.stderr
    assert "--ndim 3 --dim 1 --call-args x,dim,keepdim" in done.stdout  # the replay line


def test_a_dim_out_of_range_is_a_usage_error(tmp_path):
    done = pytest_run(tmp_path, "--lse-impl", "nd_buggy:ignores_keepdim", "--lse-ndim", "2", "--lse-dim", "2")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "dim=2 is out of range for 2-D inputs" in done.stderr


def test_an_isolated_nd_implementation_gets_its_call_convention_in_the_worker(tmp_path):
    correct = str(HERE / "correct" / "nd_tuple_result.py")  # no :func: lse
    done = pytest_run(tmp_path, "--lse-impl", correct, "--lse-isolate", "--lse-ndim", "3", "--lse-dim", "0",
                      "--lse-call-args", "x,dim", "--lse-result", "1", "--lse-device", "cpu")
    assert done.returncode == 0, done.stdout + done.stderr
