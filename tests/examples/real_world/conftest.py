"""Shared by the real-world adapter tests: where the adapters live, and how to load one.

Each adapter in ``examples/real_world/`` calls one library's kernel as that library's users do;
its test skips when the library is not installed (they are not test dependencies: install them
with ``pip install -e ".[real-world]"``). ``reference`` is imported first so that Triton's interpreter is
on before any library defines a kernel on a machine without a GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import reference  # noqa: F401  (without CUDA, turns Triton's interpreter on before a library defines kernels)
from fuzz.target import load_target

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "real_world"


@pytest.fixture
def adapter():
    """``adapter(name)``: the ``lse`` function of ``examples/real_world/<name>.py``, and its TARGET string."""

    def load(name: str):
        target = f"{EXAMPLES / name}.py:lse"
        return load_target(target), target

    return load
