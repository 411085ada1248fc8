"""The fuzz suite as pytest tests: every check against one implementation, one test item per check.

    pytest -n auto --lse-impl path/to/kernel.py:lse     # in any repository: the shipped suite (fuzz.plugin)

    # test_mylse.py: the same suite for an implementation of yours, its contract declared in code
    from lse_fuzz import lse_suite
    test_mylse = lse_suite("kernels/mylse.py:lse", contract="finite", dtypes="float32,float16")

:func:`lse_suite` returns a test function parametrized over the checks of
:data:`fuzz.checks.CHECKS` and ``all`` (every check together, one metamorphic check drawn per
example, as ``lse-fuzz check`` runs them): under ``pytest -n auto`` the items spread over the
workers. A failing item prints the failure as ``lse-fuzz check`` does (the check, the minimal
counterexample, expected and got against the tolerance, the replay command), without a traceback.
An implementation that uses a construct the CPU's emulation of Triton cannot run (``unsupported``,
:mod:`fuzz.interpreter.emulation`) is skipped, not failed: the reason names the construct and says to run
with ``--lse-device cuda``.

The run's knobs (budget, seed, profile, device, example database, reproducer folder) come from the
``--lse-*`` options unless given in code; what the implementation supports (the declared contract)
comes from code only, except for the suite of ``--lse-impl`` itself (``lse_suite()``, in
:mod:`fuzz.pytest_suite.test_lse_fuzz`), whose contract is the command line's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from reference.errors import InvalidArgument

from . import option_table, validate
from .calls import CallConvention
from .checks import CHECKS
from .contract import Contract
from .isolation import RestartingImpl
from .merge import ops as merge_ops
from .option_table import api_options, plugin_options
from .outcomes import Status
from .runner import OP_OPTIONS, check
from .target import load_target, parse_target

__all__ = ["ALL", "code_options", "command_line_call", "command_line_checks", "command_line_options", "contract_options",
           "load_implementation", "lse_suite", "op_options", "run_options"]

ALL = "all"
"""The parameter of the item that runs every check together."""


def contract_options() -> tuple[str, ...]:
    """What the implementation declares it supports (``lse_fuzz.check``'s names, ``contract`` first;
    ``call`` gathers the call convention's options): from :data:`fuzz.option_table.OPTIONS`."""
    return (*(entry.api for entry in api_options() if entry.group == option_table.CONTRACT), "call")


def run_options() -> dict[str, str]:
    """``lse_fuzz.check`` option -> the pytest option that sets it when the code does not (what the
    implementation is, its contract and its op, come from code, or from the command line for
    ``--lse-impl`` alone)."""
    return {entry.api: "lse_" + entry.name for entry in plugin_options()
            if entry.api and entry.group not in (option_table.CONTRACT, option_table.OP)}


def op_options() -> tuple[str, ...]:
    """What the implementation computes (``op``, ``lse_base``): from :data:`fuzz.option_table.OPTIONS`."""
    return tuple(entry.api for entry in api_options() if entry.group == option_table.OP)


def code_options() -> tuple[str, ...]:
    """The API's options that no ``--lse-*`` option sets (the checks are each item's own), and ``max_rows``."""
    return (*(entry.api for entry in api_options() if not entry.plugin and entry.api != "checks"), "max_rows")


_LOADED = pytest.StashKey[dict]()  # (target, isolate, device) -> implementation, for the session


def lse_suite(target: Callable | str | None = None, *, isolate: bool | None = None, **options) -> Callable:
    """A pytest test function, one item per check and one for all of them, fuzzing ``target``.

    ``target`` is a callable or a TARGET string (``path/to/file.py:func``, relative to the working
    directory, or ``pkg.module:func``), loaded once per session; None means the implementation of
    ``--lse-impl``. ``isolate=True`` runs a TARGET in a worker process (a crash or hang fails one
    item, the next gets a fresh worker); None follows ``--lse-isolate``. ``options`` are
    :func:`lse_fuzz.check`'s: the declared contract (``contract``, ``dtypes``, ``layouts``,
    ``output_dtype``, ``max_n``, ``call``: how it is called, see :mod:`fuzz.calls`), the run's
    knobs (``budget``, ``seed``, ``profile``, ``device``, ``database``, ``reproducer_dir``; the
    ``--lse-*`` options fill in those not given) and
    ``max_elements``, ``max_rows``, ``huge_offsets``, ``time_limit``, ``shrink_seconds``,
    ``backward`` (:func:`code_options`). Assign the result to a
    ``test_*`` name in a test module.

    ``op="merge_state"`` or ``op="combine"`` (with ``lse_base``, ``dtypes`` of v, and the run's knobs)
    fuzzes an op instead of the row LSE (:mod:`fuzz.merge.ops`): one item per check of that op, the
    implementation called in the test's process.
    """
    allowed = (*contract_options(), *op_options(), *run_options(), *code_options())
    for name in options:
        if name not in allowed:
            raise InvalidArgument(f"lse_suite({name}=...): not an option; choose from {', '.join(allowed)}.")
    if target is not None and not callable(target):
        parse_target(target, name="lse_suite(target)")
    if isolate and (target is None or callable(target)):
        raise InvalidArgument(f"lse_suite(isolate=True) needs a TARGET string to load in a worker, not {target!r}: "
                              "give 'path/to/file.py:func' or 'pkg.module:func' (or --lse-isolate for --lse-impl).")
    names = _op_checks(target, isolate, options)
    if names is None:
        names = CHECKS
        # A contract that cannot be used fails here, when the test module is imported, not in every item.
        Contract.parse(options.get("contract", Contract.STRICT)).with_options(
            **{name: options[name] for name in contract_options()[1:] if name in options})

    @pytest.mark.lse_fuzz
    def test_lse(check_name: str, request: pytest.FixtureRequest) -> None:
        impl, described = _implementation(request, target, isolate, options.get("device"), options.get("call"))
        given = command_line_options(request.config, with_contract=target is None)
        op = options.get("op", given.pop("op", None) or "lse")
        if op != "lse":  # an op's run takes the run's knobs only (fuzz.runner.OP_OPTIONS)
            given = {name: value for name, value in given.items() if name in OP_OPTIONS and value is not None}
            given["op"] = op
        run = functools.partial(check, impl, target=described, **{**given, **options})
        result = run(checks=None if check_name == ALL else [check_name])
        if result.status is Status.UNSUPPORTED:  # no verdict on this device: not the implementation's failure
            pytest.skip(f"{result.summary()}\nin pytest: --lse-device cuda")
        if not result.passed:
            pytest.fail(result.summary(), pytrace=False)  # the summary is the report: no traceback under it

    if target is None:  # --lse-impl's suite: its checks are --lse-op's, known once pytest parsed the options
        test_lse.lse_checks_from_command_line = True
        return test_lse
    return pytest.mark.parametrize("check_name", [*names, ALL])(test_lse)


def _op_checks(target: Callable | str | None, isolate: bool | None, options: dict) -> tuple[str, ...] | None:
    """The checks of the op ``options`` names (None: the row LSE's); InvalidArgument for what an
    op's suite cannot do."""
    if options.get("op", "lse") == "lse":
        return None
    what = merge_ops.op(options["op"])
    if target is None or isolate:
        raise InvalidArgument(f"lse_suite(op={what.name!r}) runs a callable or a TARGET string in the test's process: "
                              "give the target, without isolate.")
    return what.checks


def load_implementation(target: str, *, isolate: bool, device: object = None, name: str = "--lse-impl",
                        call: CallConvention | dict | None = None) -> Callable:
    """The callable a TARGET names, or with ``isolate`` a :class:`RestartingImpl` running it in a worker
    (which applies the call convention ``call`` itself: fuzz.calls).

    InvalidArgument (one line) when it cannot be loaded; the caller closes a RestartingImpl.
    """
    if not isolate:
        return load_target(target, name=name)
    parse_target(target, name=name)
    convention = Contract(call=call or CallConvention()).call
    if not convention.is_default:  # the worker applies it (fuzz.calls): the TARGET carries it
        target = str(parse_target(target, name=name)) + convention.suffix()
    return RestartingImpl(target, device=str(validate.device(device, name="--lse-device"))).start()


def _implementation(request: pytest.FixtureRequest, target: Callable | str | None, isolate: bool | None,
                    device: object, call: object = None) -> tuple[Callable, str | None]:
    """(the callable under test, the TARGET its replay command names; None: derived from the callable)."""
    config = request.config
    if target is None:
        return request.getfixturevalue("lse_impl"), config.getoption("lse_impl") or "reference:lse"
    if callable(target):
        return target, None
    isolate = config.getoption("lse_isolate") if isolate is None else isolate
    device = config.getoption("lse_device") if device is None else device  # where the worker runs it
    loaded = config.stash.setdefault(_LOADED, {})
    key = (target, isolate, device, repr(call))
    if key not in loaded:
        try:
            impl = load_implementation(target, isolate=isolate, device=device, name="lse_suite(target)",
                                       call=call)
        except InvalidArgument as exc:
            pytest.fail(str(exc), pytrace=False)
        if isolate:
            config.add_cleanup(impl.close)
        loaded[key] = impl
    return loaded[key], target


def command_line_options(config: pytest.Config, *, with_contract: bool) -> dict[str, object]:
    """``lse_fuzz.check``'s keyword arguments that the ``--lse-*`` options set: the run's knobs, and with
    ``with_contract`` the declared contract (for ``--lse-impl``, whose contract is declared there too)."""
    given = {name: config.getoption(option) for name, option in run_options().items()}
    if with_contract:
        given.update({name: config.getoption(f"lse_{name}") for name in contract_options() if name != "call"})
        given["call"] = command_line_call(config)
        given.update({name: config.getoption(f"lse_{name}") for name in op_options()})
    return given


def command_line_checks(config: pytest.Config) -> list[str]:
    """The items of ``--lse-impl``'s suite: the checks of ``--lse-op``'s op, and ALL."""
    op = config.getoption("lse_op", default="lse") or "lse"
    return [*(CHECKS if op == "lse" else merge_ops.op(op, flag="--lse-op").checks), ALL]


def command_line_call(config: pytest.Config) -> CallConvention | None:
    """The call convention the ``--lse-ndim``, ``--lse-dim``, ... options declare (None: the default)."""
    given = {"args" if entry.name == "call_args" else entry.name: config.getoption("lse_" + entry.name, default=None)
             for entry in plugin_options() if entry.group == option_table.CALL}
    given = {name: value for name, value in given.items() if value is not None}
    if not given:
        return None
    try:
        return CallConvention(**given)
    except InvalidArgument as exc:
        raise pytest.UsageError(str(exc)) from None

