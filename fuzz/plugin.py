"""pytest plugin: the LSE fuzz suite against any implementation, from any repository.

    pytest -n auto --lse-impl path/to/file.py:lse          # the shipped suite, one item per check
    pytest -n auto --lse-impl pkg.module:lse --lse-contract finite --lse-isolate
    pytest tests/test_mine.py --lse-impl pkg.module:lse    # named paths: only those (the fixtures below)

With ``--lse-impl`` and no test paths on the command line, the shipped suite is collected beside
whatever pytest collects by default (``testpaths``, or the current directory); name paths and
exactly those run (``--pyargs fuzz.pytest_suite`` names the suite). Without ``--lse-impl`` the plugin
adds no test and prints nothing: installed, it stays out of other people's runs.

Fixtures: ``lse_impl`` (the callable under test; reference.lse without ``--lse-impl``) and
``lse_fuzz`` (``fuzz.check`` with the command-line options bound: ``lse_fuzz(checks=["agreement"])``
returns a CheckResult). ``lse_fuzz.lse_suite(target, ...)`` builds the suite for a target in code.
Heavy imports (torch, triton, hypothesis) happen inside hooks and fixtures, not at plugin load.
pytest loads this module through ``lse_fuzz.plugin``, which first makes sure ``fuzz`` is this one.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from .defaults import REPRODUCER_DIR

SUITE_DIR = Path(__file__).resolve().with_name("pytest_suite")
SUITE = SUITE_DIR / "test_lse_fuzz.py"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lse-fuzz", "row-wise LogSumExp fuzzing")
    group.addoption("--lse-impl", metavar="TARGET", default=None,
                    help="implementation under test: path/to/file.py:func or pkg.module:func; with no test paths "
                         "given, runs the shipped suite against it (default: the project's kernel, reference.lse, "
                         "for the lse_impl and lse_fuzz fixtures)")
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
    group.addoption("--lse-ndim", metavar="R", type=int, default=None,
                    help="call convention: the input's rank (default 2)")
    group.addoption("--lse-dim", metavar="D", type=int, default=None,
                    help="call convention: the dim reduced (default -1)")
    group.addoption("--lse-keepdim", action="store_true", default=None,
                    help="call convention: the result keeps the reduced dim with size 1")
    group.addoption("--lse-call-args", choices=("x", "x,dim", "x,dim,keepdim"), default=None,
                    help="call convention: lse(x) (default), lse(x, dim=D) or lse(x, dim=D, keepdim=K)")
    group.addoption("--lse-result", metavar="PLACE", default=None,
                    help="call convention: where the LSE is in the result (a tuple index, or a key or attribute name)")
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


def pytest_report_header(config: pytest.Config) -> str | None:
    target = config.getoption("lse_impl")
    if target is None and not config.getoption("lse_isolate"):
        return None  # not asked for: say nothing in other people's runs
    declared = _declared(config)
    return f"lse-fuzz: impl {target or 'reference.lse'}, contract {config.getoption('lse_contract')}" + (
        "" if declared == {} else f" ({', '.join(f'{k} {v}' for k, v in declared.items())})")


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
    from .suite import command_line_options

    return functools.partial(check, lse_impl, target=request.config.getoption("lse_impl") or "reference:lse",
                             **command_line_options(request.config, with_contract=True))
