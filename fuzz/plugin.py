"""pytest plugin: point the LSE fuzz suite at any implementation.

    pytest -n auto                                        # the project's kernel (reference.lse)
    pytest tests/fuzz/test_suite.py --lse-impl path/to/file.py:lse
    pytest tests/fuzz/test_suite.py --lse-impl pkg.module:lse --lse-contract finite

Fixtures: ``lse_impl`` (the callable under test) and ``lse_fuzz`` (``fuzz.check`` with the
command-line options bound: ``lse_fuzz(checks=["agreement"])`` returns a CheckResult).
Heavy imports (torch, triton, hypothesis) happen inside the fixtures, not at plugin load.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lse-fuzz", "row-wise LogSumExp fuzzing")
    group.addoption("--lse-impl", metavar="TARGET", default=None,
                    help="implementation under test: path/to/file.py:func or pkg.module:func "
                         "(default: the project's kernel, reference.lse)")
    group.addoption("--lse-contract", choices=("strict", "finite"), default="strict",
                    help="strict: every input (NaN, +inf included); finite: no NaN or +inf inputs")
    group.addoption("--lse-budget", metavar="N", type=int, default=None,
                    help="examples per check (default: the profile's, 50 for lse-ci)")
    group.addoption("--lse-seed", metavar="N", type=int, default=0, help="seed of the example generator")
    group.addoption("--lse-profile", default="lse-ci", choices=("lse-ci", "lse-thorough", "lse-gpu"),
                    help="Hypothesis settings profile")
    group.addoption("--lse-device", default=None, help="cpu or cuda (default: cuda when available)")
    group.addoption("--lse-database", metavar="DIR", default=None,
                    help="keep failing examples in this Hypothesis database directory")
    group.addoption("--lse-isolate", action="store_true", default=False,
                    help="run the implementation in a worker process: a crash or hang fails a test "
                         "instead of ending the pytest run")
    group.addoption("--lse-reproducers", metavar="DIR", default=".lse-fuzz",
                    help="where reproducer files of failures are written")


_IMPL = pytest.StashKey[object]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lse_fuzz: runs the fuzz checks against --lse-impl (default reference.lse)")
    target = config.getoption("lse_impl", default=None)
    isolate = config.getoption("lse_isolate", default=False)
    if target is not None or isolate:
        # Loaded here, not in the fixture, so a bad target stops the run with one usage line.
        from reference.errors import InvalidArgument

        try:
            if isolate:
                from .isolation import RestartingImpl
                from .runner import _device_option

                device = str(_device_option(config.getoption("lse_device")))
                impl = RestartingImpl(target or "reference:lse", device=device).start()
                config.add_cleanup(impl.close)
            else:
                from ._target import load_target

                impl = load_target(target)
        except InvalidArgument as exc:
            raise pytest.UsageError(f"--lse-impl: {exc}") from None
        config.stash[_IMPL] = impl


def pytest_report_header(config: pytest.Config) -> str:
    target = config.getoption("lse_impl") or "reference.lse"
    return f"lse-fuzz: impl {target}, contract {config.getoption('lse_contract')}"


@pytest.fixture(scope="session")
def lse_impl(request: pytest.FixtureRequest):
    """The implementation under test, loaded once per session (per xdist worker)."""
    if _IMPL in request.config.stash:
        return request.config.stash[_IMPL]
    import reference

    return reference.lse


@pytest.fixture(scope="session")
def lse_fuzz(request: pytest.FixtureRequest, lse_impl):
    """``fuzz.check`` bound to ``lse_impl`` and the --lse-* options; call it with ``checks=[...]``."""
    import functools

    from .runner import check

    option = request.config.getoption
    return functools.partial(
        check,
        lse_impl,
        budget=option("lse_budget"),
        seed=option("lse_seed"),
        contract=option("lse_contract"),
        profile=option("lse_profile"),
        device=option("lse_device"),
        database=option("lse_database"),
        reproducer_dir=option("lse_reproducers"),
        target=option("lse_impl") or "reference:lse",
    )
