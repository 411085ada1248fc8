"""The pytest entry point of lse-fuzz (``pytest11``): the plugin :mod:`fuzz.plugin`, once ``fuzz`` is ours.

pytest imports this module in every run of every environment lse-fuzz is installed in. Under a
unique name it loads even where a ``fuzz`` or ``reference`` of another project comes first on
``sys.path``. Then it registers no test, option or fixture of lse-fuzz: runs that do not use it go
on untouched, and one that does (an ``--lse-*`` option, the ``lse_impl`` or ``lse_fuzz`` fixture)
stops with the reason instead of "unrecognized arguments", "fixture not found" or an ImportError
from somebody else's package.
"""

from __future__ import annotations

import pytest

from ._packages import PackageClash, verify_packages

FIXTURES = ("lse_impl", "lse_fuzz")

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


def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> None:
    # The fixtures import reference and the runner when first used, after pytest may have put the
    # user's folders on sys.path (conftest.py and test files' folders): checked again then.
    if fixturedef.argname in FIXTURES:
        verify_packages()


if _CLASH is not None:
    @pytest.fixture(scope="session", name="lse_impl")
    def _lse_impl_refused():
        raise _CLASH

    @pytest.fixture(scope="session", name="lse_fuzz")
    def _lse_fuzz_refused():
        raise _CLASH
