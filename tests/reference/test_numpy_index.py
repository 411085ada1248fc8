"""reference._numpy_index: ``lse(x)`` of a CPU tensor in Triton 3.6's interpreter on NumPy 2.5.

Triton 3.6 converts a kernel's scalar tensor with ``int()`` of a one-element array, which this
NumPy refuses; Triton 3.9 (this machine's) converts through ``.squeeze()``. So each test puts 3.6's
line back, in a fresh process (the interpreter's patches are process-wide), and calls the package
as a user does: it failed before the package installed the repair itself, and it fails again with
the install taken out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from triton_3_6_index import PRELUDE

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = PRELUDE + """
import reference
from reference import _numpy_index

if sys.argv[1] == "without":
    _numpy_index.install = lambda: False
x = torch.randn(5, 300, generator=torch.Generator().manual_seed(0))
try:
    got = reference.lse(x)
except Exception as exc:
    print("raised", type(exc.__cause__ or exc).__name__)
else:
    print("equal", torch.allclose(got, torch.logsumexp(x.double(), 1).float(), rtol=1e-6, atol=0),
          _numpy_index.installed())
"""


def run(mode: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300).stdout.strip()


def test_the_package_installs_the_repair_before_its_kernels_run():
    assert run("with") == "equal True True"


def test_without_it_triton_3_6s_conversion_fails_on_this_numpy():
    assert run("without") == "raised TypeError"
