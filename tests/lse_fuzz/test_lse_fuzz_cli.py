"""``lse-fuzz`` (the console script) and ``python -m lse_fuzz`` are fuzz's CLI behind the package check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lse_fuzz.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_python_m_lse_fuzz_is_the_same_cli():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    versions = [subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, env=env,
                               timeout=120).stdout for module in ("lse_fuzz", "fuzz")]
    assert versions[0] == versions[1] and versions[0].startswith("lse-fuzz ")


def test_main_passes_its_arguments_and_exit_code_through(capsys):
    assert main(["mutants", "--show", "no_such_mutant"]) == 2
    assert "--show='no_such_mutant' is not a mutant" in capsys.readouterr().err
