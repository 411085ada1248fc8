"""Correct, written differently: the two-pass kernel of ``tests/fuzz/candidates/triton_two_pass.py``.

That file is a standalone candidate (as a user would submit it to ``lse-fuzz check`` or ``grade``);
this module imports it by path so in-process tests use the very same kernel.
"""

import importlib.util
from pathlib import Path

import reference  # noqa: F401  (turns on Triton's interpreter without a GPU, before @triton.jit)

_PATH = Path(__file__).resolve().parents[1] / "candidates" / "triton_two_pass.py"
_spec = importlib.util.spec_from_file_location("doubles._triton_two_pass", _PATH)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

lse = _module.lse
