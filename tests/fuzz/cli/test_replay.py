"""``lse-fuzz replay``: the command every failure report prints must reproduce the failure."""

from __future__ import annotations

import shlex
from pathlib import Path

import doubles
import pytest

import lse_fuzz
from fuzz.cli import main

DOUBLES = str(Path(doubles.__file__))


@pytest.fixture(scope="module")
def failure(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproducers")
    result = lse_fuzz.check(doubles.off_by_max, budget=50, seed=0, reproducer_dir=out, target=f"{DOUBLES}:off_by_max")
    assert result.status is lse_fuzz.Status.FAILED
    return result


def test_the_printed_replay_command_reproduces_the_failure(failure, capsys):
    argv = shlex.split(failure.failure.replay)
    assert argv[:2] == ["lse-fuzz", "replay"]
    assert main(argv[1:]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"FAIL {failure.target}: check '{failure.check}'")  # the verdict as `lse-fuzz check` spells it
    assert f"check '{failure.check}' failed" in out and "replay:" in out


def test_a_correct_implementation_passes_the_saved_example(failure, capsys):
    assert main(["replay", str(failure.reproducer), "--impl", "reference:lse"]) == 0
    assert capsys.readouterr().out.startswith("PASS reference:lse")  # the verdict as `lse-fuzz check` spells it


@pytest.mark.parametrize(
    "argv, message",
    [
        (["replay", "missing.pt"], "file='missing.pt' does not exist"),
        (["replay", "{file}", "--impl", "no/such/file.py:lse"], "no such file"),
    ],
    ids=["missing file", "missing target"],
)
def test_bad_input_is_one_line_and_exit_2(failure, capsys, argv, message):
    argv = [a.format(file=failure.reproducer) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("lse-fuzz: error:") and message in err and err.count("\n") == 1
