"""Option spellings that changed still work for one release: the old one parses to the same value
as the new one and prints one line naming the new one; the new one prints nothing."""

from __future__ import annotations

import pytest

from fuzz.cli import build_parser

# (command line with the old spelling, the same with the new one, the parsed name, the new spelling)
RENAMED = [
    (["grade", "d/", "--out", "r"], ["grade", "d/", "--out-dir", "r"], "out_dir", "--out-dir"),
    (["check", "k.py", "--timeout", "7"], ["check", "k.py", "--worker-timeout", "7"], "timeout", "--worker-timeout"),
    (["grade", "d/", "--timeout", "7"], ["grade", "d/", "--worker-timeout", "7"], "timeout", "--worker-timeout"),
    (["check", "k.py", "--time-limit", "0.5"], ["check", "k.py", "--fail-slower-than", "0.5"], "time_limit",
     "--fail-slower-than"),
    (["mutants", "--no-progress"], ["mutants", "-q"], "quiet", "--quiet"),
    (["mutate", "k.py", "--no-progress"], ["mutate", "k.py", "--quiet"], "quiet", "--quiet"),
    (["mutants", "--timeout-factor", "4"], ["mutants", "--mutant-timeout-factor", "4"], "timeout_factor",
     "--mutant-timeout-factor"),
    (["mutate", "k.py", "--timeout-floor", "9"], ["mutate", "k.py", "--mutant-timeout-floor", "9"], "timeout_floor",
     "--mutant-timeout-floor"),
]


def _option(argv: list[str]) -> str:
    return next(word for word in argv if word.startswith("-"))


IDS = [f"{old[0]} {_option(old)}" for old, *_ in RENAMED]


@pytest.mark.parametrize("old, new, dest, spelling", RENAMED, ids=IDS)
def test_the_old_spelling_works_and_names_the_new_one(capsys, old, new, dest, spelling):
    parsed = build_parser().parse_args(old)
    err = capsys.readouterr().err
    assert err == f"lse-fuzz: {_option(old)} is now {spelling}; the old spelling goes away in the next release\n"
    assert getattr(parsed, dest) == getattr(build_parser().parse_args(new), dest)
    at = new.index(_option(new))
    without = new[:at] + new[at + (1 if at == len(new) - 1 else 2):]  # the option (and its value) left out
    assert getattr(parsed, dest) != getattr(build_parser().parse_args(without), dest), "the option changed nothing"


@pytest.mark.parametrize("old, new, dest, spelling", RENAMED, ids=IDS)
def test_the_new_spelling_prints_nothing(capsys, old, new, dest, spelling):
    build_parser().parse_args(new)
    assert capsys.readouterr().err == ""


def test_an_old_spelling_given_twice_prints_one_line(capsys):
    parsed = build_parser().parse_args(["grade", "d/", "--out", "a", "--out", "b", "--timeout", "5"])
    lines = capsys.readouterr().err.splitlines()
    assert parsed.out_dir == "b" and parsed.timeout == 5
    assert [line.split()[1] for line in lines] == ["--out", "--timeout"]


@pytest.mark.parametrize("command, old", [("grade", "--out"), ("check", "--time-limit"), ("mutants", "--no-progress")])
def test_help_shows_only_the_new_spelling(capsys, command, old):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = capsys.readouterr().out
    assert f"{old} " not in text and f"{old}\n" not in text


def test_the_old_spelling_reaches_the_command(tmp_path):
    """Through a whole command: the notice, then the command at work with the value (its own error
    names the new spelling)."""
    import subprocess
    import sys
    from pathlib import Path

    candidates = Path(__file__).resolve().parents[2] / "implementations" / "candidates"
    (tmp_path / "notes.txt").write_text("x")
    command = [sys.executable, "-m", "fuzz", "grade", str(candidates), "--out", str(tmp_path / "notes.txt")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "lse-fuzz: --out is now --out-dir; the old spelling goes away in the next release",
        f"lse-fuzz: error: --out-dir={str(tmp_path / 'notes.txt')!r} is a file, not a directory."]
