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

from .defaults import REPRODUCER_DIR


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lse-fuzz", "row-wise LogSumExp fuzzing")
    group.addoption("--lse-impl", metavar="TARGET", default=None,
                    help="implementation under test: path/to/file.py:func or pkg.module:func "
                         "(default: the project's kernel, reference.lse)")
    group.addoption("--lse-contract", choices=("strict", "finite"), default="strict",
                    help="strict: every input (NaN, +inf included); finite: no NaN or +inf inputs")
    group.addoption("--lse-dtypes", metavar="NAMES", default=None,
                    help="declared contract: comma-separated input dtypes (default: all four)")
    group.addoption("--lse-layouts", choices=("contiguous", "rows", "any"), default="any",
                    help="declared contract: contiguous rows, any row stride, or any strides (default)")
    group.addoption("--lse-output-dtype", choices=("float32", "input", "either"), default="either",
                    help="declared contract: the result's dtype (default: float32 or the input's)")
    group.addoption("--lse-max-n", metavar="N", type=int, default=None,
                    help="declared contract: the longest row (default: any)")
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
    group.addoption("--lse-reproducers", metavar="DIR", default=REPRODUCER_DIR,
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
                from . import validate
                from .isolation import RestartingImpl

                device = str(validate.device(config.getoption("lse_device"), name="--lse-device"))
                impl = RestartingImpl(target or "reference:lse", device=device).start()
                config.add_cleanup(impl.close)
            else:
                from .target import load_target

                impl = load_target(target)
        except InvalidArgument as exc:
            raise pytest.UsageError(f"--lse-impl: {exc}") from None
        config.stash[_IMPL] = impl


def pytest_report_header(config: pytest.Config) -> str:
    target = config.getoption("lse_impl") or "reference.lse"
    return f"lse-fuzz: impl {target}, contract {config.getoption('lse_contract')}" + (
        "" if _declared(config) == {} else f" ({', '.join(f'{k} {v}' for k, v in _declared(config).items())})")


def _declared(config: pytest.Config) -> dict[str, object]:
    """The declared-contract options given on the command line (beyond --lse-contract)."""
    given = {"dtypes": config.getoption("lse_dtypes"), "layouts": config.getoption("lse_layouts"),
             "output_dtype": config.getoption("lse_output_dtype"), "max_n": config.getoption("lse_max_n")}
    defaults = {"dtypes": None, "layouts": "any", "output_dtype": "either", "max_n": None}
    return {name: value for name, value in given.items() if value != defaults[name]}


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
        **_declared(request.config),
        profile=option("lse_profile"),
        device=option("lse_device"),
        database=option("lse_database"),
        reproducer_dir=option("lse_reproducers"),
        target=option("lse_impl") or "reference:lse",
    )
