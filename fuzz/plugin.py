"""pytest plugin: the LSE fuzz suite against any implementation, from any repository.

    pytest -n auto --lse-impl path/to/file.py:lse          # the shipped suite, one item per check
    pytest -n auto --lse-impl pkg.module:lse --lse-contract finite --lse-isolate
    pytest tests/test_mine.py --lse-impl pkg.module:lse    # named paths: only those (the fixtures below)

With ``--lse-impl`` and no test paths on the command line, the shipped suite is collected beside
whatever pytest collects by default (``testpaths``, or the current directory); name paths and
exactly those run (``--pyargs fuzz.pytest_suite`` names the suite). Without ``--lse-impl`` the plugin
adds no test and prints nothing: installed, it stays out of other people's runs.

Fixtures: ``lse_impl`` (the callable under test; reference.lse without ``--lse-impl``) and
``lse_fuzz`` (``lse_fuzz.check`` with the command-line options bound: ``lse_fuzz(checks=["agreement"])``
returns a CheckResult). ``lse_fuzz.lse_suite(target, ...)`` builds the suite for a target in code.
Heavy imports (torch, triton, hypothesis) happen inside hooks and fixtures, not at plugin load.
pytest loads this module through ``lse_fuzz.plugin``, which first makes sure ``fuzz`` is this one.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from .option_table import CALL, CONTRACT, add_plugin_options, plugin_options

SUITE_DIR = Path(__file__).resolve().with_name("pytest_suite")
SUITE = SUITE_DIR / "test_lse_fuzz.py"


def pytest_addoption(parser: pytest.Parser) -> None:
    # Every --lse-* option is an entry of fuzz.option_table (with plugin=True): declared once for the
    # command line, this plugin and the Python API.
    add_plugin_options(parser.getgroup("lse-fuzz", "row-wise LogSumExp fuzzing"))


_IMPL = pytest.StashKey[object]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lse_fuzz: runs the fuzz checks against --lse-impl (default reference.lse)")
    target = config.getoption("lse_impl", default=None)
    isolate = config.getoption("lse_isolate", default=False)
    if isolate and (config.getoption("lse_op", default="lse") or "lse") != "lse":
        raise pytest.UsageError("--lse-isolate runs the row LSE in a worker; an op (--lse-op) runs in the test's "
                                "process: drop --lse-isolate.")
    if target is not None or isolate:
        # Loaded here, not in the fixture, so a bad target stops the run with one usage line.
        from reference.errors import InvalidArgument

        from .suite import command_line_call, load_implementation

        try:
            impl = load_implementation(target or "reference:lse", isolate=isolate,
                                       device=config.getoption("lse_device"), call=command_line_call(config))
        except InvalidArgument as exc:
            raise pytest.UsageError(str(exc)) from None  # the message names --lse-impl and its value
        if isolate:
            config.add_cleanup(impl.close)
        config.stash[_IMPL] = impl
    if target is not None and config.args_source is not pytest.Config.ArgsSource.ARGS:
        # No test paths named: the suite joins what pytest collects by default. Its folder, not the
        # file, is the argument, so the items are named test_lse_fuzz.py::... wherever it is
        # installed (a file argument outside the rootdir gets an empty name). Each xdist worker
        # runs this hook too and collects the same items.
        config.args.append(str(SUITE_DIR))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The shipped suite even where ``python_files`` would not match test_lse_fuzz.py (pytest's own
    collector takes it where it does)."""
    if file_path != SUITE or any(fnmatch.fnmatch(SUITE.name, pattern)
                                 for pattern in parent.config.getini("python_files")):
        return None
    return pytest.Module.from_parent(parent, path=file_path)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``--lse-impl``'s suite (``lse_suite()``): one item per check of ``--lse-op``'s op, and ALL."""
    if getattr(metafunc.function, "lse_checks_from_command_line", False):
        from .suite import command_line_checks

        metafunc.parametrize("check_name", command_line_checks(metafunc.config))


def pytest_report_header(config: pytest.Config) -> str | None:
    target = config.getoption("lse_impl")
    if target is None and not config.getoption("lse_isolate"):
        return None  # not asked for: say nothing in other people's runs
    declared = _declared(config)
    return f"lse-fuzz: impl {target or 'reference.lse'}, contract {config.getoption('lse_contract')}" + (
        "" if declared == {} else f" ({', '.join(f'{k} {v}' for k, v in declared.items())})")


def _declared(config: pytest.Config) -> dict[str, object]:
    """The declared-contract and call-convention options given on the command line (beyond
    --lse-contract), as name: value."""
    given = {}
    for entry in plugin_options():
        if entry.group in (CONTRACT, CALL) and entry.name != "contract":
            value = config.getoption("lse_" + entry.name)
            if value != entry.default_for("plugin"):
                given[entry.name] = value
    return given


@pytest.fixture(scope="session")
def lse_impl(request: pytest.FixtureRequest):
    """The implementation under test, loaded once per session (per xdist worker)."""
    if _IMPL in request.config.stash:
        return request.config.stash[_IMPL]
    import reference

    return reference.lse


@pytest.fixture(scope="session")
def lse_fuzz(request: pytest.FixtureRequest, lse_impl):
    """``lse_fuzz.check`` bound to ``lse_impl`` and the --lse-* options; call it with ``checks=[...]``."""
    import functools

    from .runner import check
    from .suite import command_line_options

    return functools.partial(check, lse_impl, target=request.config.getoption("lse_impl") or "reference:lse",
                             **command_line_options(request.config, with_contract=True))
