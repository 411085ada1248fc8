"""fuzz.interpreter.numpy_compat: Triton 3.6's interpreter converts a scalar tensor with ``int()`` of a
one-element array, which NumPy 2.5 refuses; the wrapper converts through ``.item()``.

Triton 3.9 (this machine's) converts through ``.squeeze()`` already, so the tests put Triton 3.6's
own line back (``int(self.handle.data)``, read from its interpreter) and show it fails on this
NumPy and passes once the wrapper is installed. Each runs in a fresh process: the interpreter's
patches are process-wide.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from triton_3_6_index import PRELUDE

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = PRELUDE + """
if sys.argv[1] == "fixed":
    from fuzz.interpreter import numpy_compat
    assert numpy_compat.install() and numpy_compat.installed() and numpy_compat.install()

@triton.jit
def row_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):  # N is a scalar tensor here: range() calls its __index__
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))

x = torch.arange(10, dtype=torch.float32)
out = torch.empty(1)
try:
    row_sum[(1,)](x, out, 10, BLOCK=4)
except Exception as exc:
    print("raised", repr(exc.__cause__ or exc))
else:
    print("sum", out.item())
"""


def run(mode: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300).stdout.strip()


def test_triton_3_6s_conversion_fails_on_this_numpy_without_the_wrapper():
    assert run("plain").startswith("raised TypeError('only 0-dimensional arrays")


def test_the_wrapper_converts_the_scalar_and_the_kernel_runs():
    assert run("fixed") == "sum 45.0"
