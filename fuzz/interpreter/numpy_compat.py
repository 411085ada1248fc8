"""Triton's interpreter on NumPy 2.5: a tensor used as a Python index converts again.

The repair lives in :mod:`reference._numpy_index` (the reference kernel's CPU path needs it too,
and that package imports nothing of the fuzzer's); the fuzzer installs it with its other repairs
(:mod:`.repairs`) wherever it runs a kernel in the interpreter.
"""

from __future__ import annotations

from reference._numpy_index import install, installed

__all__ = ["install", "installed"]
