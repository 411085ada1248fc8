"""The pytest entry point of lse-fuzz (``pytest11``): the plugin :mod:`fuzz.plugin`, once ``fuzz`` is ours.

pytest imports this module in every run of every environment lse-fuzz is installed in. Under a
unique name it loads even where a ``fuzz`` or ``reference`` of another project comes first on
``sys.path``; then it registers nothing but a check of the command line, so runs that do not use
lse-fuzz go on untouched, and one that passes an ``--lse-*`` option stops with the reason instead
of "unrecognized arguments" or an ImportError from somebody else's package.
"""

from __future__ import annotations

import pytest

from ._packages import PackageClash, verify_packages

try:
    verify_packages()
except PackageClash as clash:
    _CLASH: PackageClash | None = clash
else:
    _CLASH = None
    pytest_plugins = ["fuzz.plugin"]


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    if _CLASH is not None and any(arg.startswith("--lse-") for arg in args):
        raise pytest.UsageError(str(_CLASH))
