"""The documentation's code samples run, and its commands name options that exist.

The pages are README.md and docs/*.md (bench/RESULTS.md records commands as they ran, on older
trees too: it is not run). A fenced block is judged by its language, unless the line before it is
one of these HTML comments (invisible on GitHub and on the site):

* ``<!-- docs-test: illustrative (why) -->``: a ``python`` block that is not run (a file of your
  repository that imports your kernel, say).
* ``<!-- docs-test: output DEST=SRC ... -->``: a ``console`` block, ``$ COMMAND`` and what it
  printed, pasted from a real run. The command runs in an empty folder holding each repository
  file SRC as DEST, on the CPU, and must print the same, but for seconds and the folder's path
  (shown as ``/home/you/project``).

Unmarked blocks:

* ``python``: run, a page's blocks in order in one namespace (as a reader pastes them into one
  session); every ``test_*`` function a block defines is called.
* ``bash``, ``sh``, ``console``, marked or not: not run (they install, fuzz for minutes, or need
  your kernel), but every ``lse-fuzz COMMAND`` line must name a command that exists
  and only options its ``--help`` lists, and a ``pytest`` line only ``--lse-*`` options the plugin
  adds: a renamed option breaks the page, not a reader's first try.

No page points to ``python -m fuzz``: it is internal (it skips the check that ``fuzz``,
``reference`` and ``mutants`` are lse-fuzz's own); users run ``lse-fuzz``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?:<!-- docs-test: (?P<mark>\w+)(?P<args>[^>]*)-->\n)?```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^```$",
                   re.S | re.M)
SHELLS = ("bash", "sh", "console")
PROJECT = "/home/you/project"  # how an output block shows the folder its command ran in


def blocks(page: Path) -> list[dict]:
    """Each fenced block of ``page``: its language, body, mark (None, "illustrative", "output") and the mark's arguments."""
    return [match.groupdict() for match in FENCE.finditer(page.read_text())]


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


# --- python ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("page", [p for p in PAGES if any(b["lang"] == "python" and not b["mark"] for b in blocks(p))],
                         ids=page_id)
def test_the_python_samples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a sample that writes (reproducers, a database) writes here
    namespace: dict = {"__name__": "docs_sample"}
    for number, block in enumerate(b for b in blocks(page) if b["lang"] == "python" and not b["mark"]):
        before = set(namespace)
        exec(compile(block["body"], f"{page_id(page)}, python block {number + 1}", "exec"), namespace)
        for name in sorted(set(namespace) - before):
            if name.startswith("test_") and callable(namespace[name]):
                namespace[name]()


# --- commands --------------------------------------------------------------------------------------

@cache
def help_text(command: str) -> str | None:
    """``lse-fuzz COMMAND --help`` (``COMMAND`` "pytest": pytest's, with the plugin's options), or None if no such command."""
    argv = ([sys.executable, "-m", "pytest", "--help"] if command == "pytest"
            else [sys.executable, "-m", "fuzz", command, "--help"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    return done.stdout if done.returncode == 0 else None


def command_lines(body: str) -> list[str]:
    """The commands of a shell block: ``$ `` prompts stripped, output lines of a console block skipped,
    ``&&`` / ``|`` / ``;`` chains split."""
    lines = body.splitlines()
    if any(line.startswith("$ ") for line in lines):
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    return [part.strip() for line in lines for part in re.split(r"&&|\|\|?|;", line) if part.strip()]


def option_problems(line: str) -> list[str]:
    """What is wrong with one command line's use of lse-fuzz: an unknown command or option."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return []  # not shell (a pasted output line): nothing to judge
    while words and re.fullmatch(r"\w+=\S*", words[0]):
        words = words[1:]  # VAR=value before the command
    if words[:1] == ["lse-fuzz"] and len(words) > 1 and not words[1].startswith("-"):
        command, options = words[1], words[2:]
    elif words[:3] == ["python", "-m", "fuzz"]:
        return [f"{line!r}: `python -m fuzz` is internal (it skips lse-fuzz's package check): write `lse-fuzz ...`"]
    elif "pytest" in words[:3]:
        command, options = "pytest", [w for w in words if w.startswith("--lse-")]
    else:
        return []
    text = help_text(command)
    if text is None:
        return [f"{line!r}: there is no command `lse-fuzz {command}`"]
    names = {word.split("=")[0] for word in options if re.fullmatch(r"--?[a-z][\w-]*(=.*)?", word)}
    return [f"{line!r}: `{command}` has no option {name}" for name in sorted(names)
            if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_documented_command_and_option_exists(page):
    problems = [problem for block in blocks(page) if block["lang"] in SHELLS
                for line in command_lines(block["body"]) for problem in option_problems(line)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_page_points_to_the_internal_entry_point(page):
    lines = [f"line {number}: {line.strip()}" for number, line in enumerate(page.read_text().splitlines(), 1)
             if re.search(r"python -m fuzz\b(?!\.)", line)]
    assert not lines, "`python -m fuzz` is internal: write `lse-fuzz ...`\n" + "\n".join(lines)


@pytest.mark.parametrize("line, expected", [
    ("lse-fuzz check k.py:lse --budjet 5", "`check` has no option --budjet"),
    ("lse-fuzz checks k.py:lse", "there is no command `lse-fuzz checks`"),
    ("python -m fuzz replay FILE --impl T", "`python -m fuzz` is internal"),
    ("python -m pytest -n auto --lse-implementation k.py:lse", "`pytest` has no option --lse-implementation"),
    ("lse-fuzz grade d/ --out r", "`grade` has no option --out"),  # a former spelling: the docs use the new one
], ids=["option", "command", "python -m fuzz", "pytest plugin", "former spelling"])
def test_a_misspelt_command_or_option_is_named(line, expected):
    [problem] = option_problems(line)
    assert expected in problem


def test_well_spelt_commands_pass():
    assert option_problems("lse-fuzz mutants --show no_max_added  # a comment --not-an-option") == []
    assert option_problems("PYTHONPATH=. lse-fuzz grade d/ -j 8 --out-dir r --executor ray") == []
    assert option_problems("pip install -e '.[test]' --no-such-pip-option") == []  # not ours to judge


# --- pasted output ---------------------------------------------------------------------------------

def normalized(text: str) -> str:
    """Output with what changes from run to run masked: seconds."""
    return re.sub(r"\b\d+(\.\d+)? s\b", "N s", text).rstrip()


OUTPUTS = [(page, block) for page in PAGES for block in blocks(page) if block["mark"] == "output"]


@pytest.mark.parametrize("page, block", OUTPUTS, ids=[f"{page_id(p)}:{b['body'].split()[1]}" for p, b in OUTPUTS])
def test_pasted_output_is_what_the_command_prints(page, block, tmp_path):
    for pair in block["args"].split():
        destination, _, source = pair.partition("=")
        (tmp_path / destination).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / source, tmp_path / destination)
    command, _, expected = block["body"].partition("\n")
    assert command.startswith("$ "), f"{page_id(page)}: an output block starts with `$ COMMAND`"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # this environment's lse-fuzz
    done = subprocess.run(command[2:], shell=True, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PATH": path, "CUDA_VISIBLE_DEVICES": ""})  # pasted from a CPU run
    printed = (done.stderr + done.stdout).replace(str(tmp_path), PROJECT)  # a terminal shows the header first
    assert normalized(printed) == normalized(expected), printed


def test_the_readme_stays_a_front_page():
    """The README says what the tool is, how to install it, how to check a kernel and where to read
    on: at most 250 lines; the rest is docs/ (and numbers are bench/RESULTS.md's)."""
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= 250, f"README.md has {lines} lines: move sections to docs/ and link them"
