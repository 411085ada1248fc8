"""One declaration of each option: every command's --help, the pytest plugin's --lse-* options and the
API's validation come from fuzz.option_table, so an option added there shows everywhere at once."""

from __future__ import annotations

import argparse

import pytest

from fuzz import option_table
from fuzz.cli import build_parser
from fuzz.grading import GradeOptions
from fuzz.option_table import CALL, CONTRACT, FUZZING, OPTIONS, Option
from fuzz.plugin import pytest_addoption
from fuzz.suite import lse_suite, run_options

NEW = Option("frobnicate", "--frobnicate", int, 3, "how hard to frobnicate (default {default})", commands=FUZZING,
             plugin=True, metavar="N", api="frobnicate")


@pytest.fixture
def one_more_option(monkeypatch):
    """The table with one more entry, and nothing else changed."""
    monkeypatch.setattr(option_table, "OPTIONS", (*OPTIONS, NEW))
    return NEW


def _help(command: str) -> str:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command].format_help()


def _plugin_flags() -> dict[str, dict]:
    parser = pytest.Parser(_ispytest=True)
    pytest_addoption(parser)
    group = parser.getgroup("lse-fuzz")
    return {opt.names()[0]: opt.attrs() for opt in group.options}


@pytest.mark.parametrize("command", FUZZING)
def test_an_option_added_to_the_table_is_in_every_commands_help(one_more_option, command):
    text = " ".join(_help(command).split())
    assert "--frobnicate N how hard to frobnicate (default 3)" in text
    args = build_parser().parse_args([command, "target.py", "--frobnicate", "5"] if command != "mutants"
                                     else [command, "--frobnicate", "5"])
    assert args.frobnicate == 5


def test_an_option_added_to_the_table_is_in_the_plugin_and_the_api(one_more_option):
    flags = _plugin_flags()
    assert flags["--lse-frobnicate"]["dest"] == "lse_frobnicate" and flags["--lse-frobnicate"]["default"] == 3
    assert run_options()["frobnicate"] == "lse_frobnicate"  # the API option the plugin option sets
    lse_suite("reference:lse", frobnicate=1)  # accepted by the API's validation
    assert option_table.cli_name("frobnicate") == "--frobnicate"


def test_without_the_entry_none_of_them_has_it():
    assert "--frobnicate" not in _help("check") and "--lse-frobnicate" not in _plugin_flags()
    with pytest.raises(ValueError, match="frobnicate=...\\): not an option"):
        lse_suite("reference:lse", frobnicate=1)


@pytest.mark.parametrize("command", FUZZING)
def test_every_command_that_fuzzes_takes_the_whole_contract_and_call_convention(command):
    text = _help(command)
    for entry in OPTIONS:
        if entry.group in (CONTRACT, CALL) or entry.name == "backward":
            assert entry.flag in text, (command, entry.flag)


def test_mutate_help_lists_the_call_convention_and_backward():
    text = _help("mutate")
    for flag in ("--ndim", "--dim", "--keepdim", "--call-args", "--result", "--backward"):
        assert flag in text


def test_the_plugin_declares_the_contract_and_the_call_convention_from_the_table():
    flags = _plugin_flags()
    for entry in OPTIONS:
        if entry.group in (CONTRACT, CALL):
            assert entry.plugin_flag in flags, entry.flag
    assert flags["--lse-profile"]["default"] == "lse-ci" and flags["--lse-budget"]["default"] is None


def test_each_option_is_declared_once_and_every_command_is_known():
    names = [entry.name for entry in OPTIONS]
    assert len(names) == len(set(names))
    for entry in OPTIONS:
        assert set(entry.commands) <= set(option_table.COMMANDS), entry.name
        assert set(entry.defaults) | set(entry.helps) <= {*entry.commands, "plugin"}, entry.name
        assert entry.plugin or entry.commands, entry.name


def test_the_options_object_is_built_once_from_the_command_line():
    args = build_parser().parse_args(["check", "t.py", "--ndim", "3", "--dim", "1", "--contract", "finite",
                                      "--dtypes", "float32, float16", "--memory-limit", "0.5", "--worker-timeout", "7"])
    options = GradeOptions.from_args(args)
    call, contract = options.contract.call, options.contract
    assert (call.ndim, call.dim, contract.value, contract.to_dict()["dtypes"]) == (3, 1, "finite", ["float32", "float16"])
    assert options.memory_limit == 1 << 29 and options.timeout == 7.0


def test_a_bad_value_is_named_by_its_flag():
    args = build_parser().parse_args(["grade", "d", "--worker-timeout", "-1"])
    with pytest.raises(ValueError, match="--worker-timeout"):
        GradeOptions.from_args(args)


def test_mutate_builds_its_options_with_the_mutation_defaults():
    args = build_parser().parse_args(["mutate", "k.py:lse", "--ndim", "3", "--dim", "1", "--backward"])
    assert (args.budget, args.shrink_seconds) == (250, 2.0)
    assert (args.ndim, args.dim, args.backward) == (3, 1, True)
