"""Packages whose names are imported on first use (PEP 562).

``lse-fuzz --help`` must not pay for torch, Triton and Hypothesis, and a worker that loads one
patched kernel must not import the mutation runner: each package's ``__init__`` maps its public
names to the modules that define them, and :func:`lazy_exports` imports a module when one of its
names is first asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """The ``__getattr__`` and ``__dir__`` of ``package``; ``exports``: name -> the module that defines
    it (``".checks"``, relative to the package, or an absolute module name)."""

    def __getattr__(name: str):
        if name in exports:
            return getattr(importlib.import_module(exports[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
