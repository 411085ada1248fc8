"""The two tiers of the suite: the fast one (`pytest -n auto`) and the integration one
(`pytest -n auto -m integration`), split by the list in tests/conftest.py."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# Loaded by path: the name `conftest` is also the repository root's.
_spec = importlib.util.spec_from_file_location("tests_conftest", TESTS / "conftest.py")
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
INTEGRATION = _conftest.INTEGRATION


def test_every_listed_integration_module_exists():
    assert [name for name in INTEGRATION if not (TESTS / name).is_file()] == []


def _collected(*options: str) -> set[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *options,
                           "tests/fuzz/grading/test_parts.py", "tests/fuzz/grading/test_evaluate.py"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}


def test_the_default_run_leaves_integration_modules_out_and_m_integration_takes_only_them():
    assert _collected() == {"tests/fuzz/grading/test_evaluate.py"}
    assert _collected("-m", "integration") == {"tests/fuzz/grading/test_parts.py"}


def test_the_fast_tiers_expression_is_the_one_the_collection_leaves_listed_modules_out_under():
    # tests/conftest.py does not import the listed modules under the fast tier's expression; were
    # pyproject.toml's addopts to change it, they would be imported again (slower, never wrong).
    import shlex
    import tomllib

    addopts = shlex.split(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"])
    assert addopts[addopts.index("-m") + 1] == _conftest.FAST_TIER


class _Config:
    def __init__(self, markexpr: str) -> None:
        self.option = type("Option", (), {"markexpr": markexpr})()


def test_auto_gives_the_fast_tier_one_worker_more_than_the_cpus_and_leaves_other_tiers_to_xdist(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert _conftest.pytest_xdist_auto_num_workers(_Config(_conftest.FAST_TIER)) == 3
    assert _conftest.pytest_xdist_auto_num_workers(_Config("integration")) is None
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "2")
    assert _conftest.pytest_xdist_auto_num_workers(_Config(_conftest.FAST_TIER)) is None


def test_xdist_asks_the_conftest_for_the_count_of_n_auto(pytestconfig, monkeypatch):
    # Through the hook xdist calls for `-n auto` (first answer wins): the conftest's, not xdist's own.
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(pytestconfig.option, "markexpr", _conftest.FAST_TIER)
    assert pytestconfig.hook.pytest_xdist_auto_num_workers(config=pytestconfig) == len(os.sched_getaffinity(0)) + 1
