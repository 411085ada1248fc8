"""bench/results keeps to its rule (bench/results/README.md): each file a small summary that
bench/RESULTS.md names, every file RESULTS.md names there present, and raw files of single runs
named with the commit that holds them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
RECORDS = ("agreement.md", "interpreter-diff-cpu.json.gz", "interpreter-diff-gpu.json.gz", "interpreter-diff.md",
           "2026-12-01-h200-parity/")  # kept whole: see the README
MAX_BYTES = 20_000
NAMED = re.compile(r"(?<![\w/:.-])results/([\w.{},*-]+[\w}*])")  # results/NAME, not COMMIT:bench/results/NAME
AT_COMMIT = re.compile(r"\b([0-9a-f]{7,40}):bench/results/([\w.{},*/-]+[\w}*])")


def expand(name: str) -> list[str]:
    """``a.{log,jsonl}`` -> ``a.log``, ``a.jsonl`` (every brace group)."""
    match = re.search(r"\{([^}]*)\}", name)
    if not match:
        return [name]
    return [full for alternative in match.group(1).split(",")
            for full in expand(name[:match.start()] + alternative + name[match.end():])]


def tracked() -> list[str]:
    """The files of bench/results, relative to it: git's list where there is one, else the folder's."""
    done = subprocess.run(["git", "ls-files", "bench/results"], capture_output=True, text=True, cwd=ROOT)
    if done.returncode == 0 and done.stdout:
        return [line.removeprefix("bench/results/") for line in done.stdout.splitlines()]
    return [path.relative_to(RESULTS).as_posix() for path in RESULTS.rglob("*") if path.is_file()]


def rule_breaches(files: dict[str, int], results_text: str) -> list[str]:
    """What breaks the rule, given each file's size and RESULTS.md's text."""
    named_here = {full for name in NAMED.findall(results_text) for full in expand(name)}
    breaches = []
    for name, size in sorted(files.items()):
        if name == "README.md" or name.startswith(RECORDS):
            continue
        if "/" in name or Path(name).suffix not in (".md", ".txt"):
            breaches.append(f"{name}: not a summary (a .md or .txt file at the top of the folder)")
        elif size > MAX_BYTES:
            breaches.append(f"{name}: {size} bytes, over {MAX_BYTES}: summarise it, leave the raw file to history")
        elif name not in named_here:
            breaches.append(f"{name}: RESULTS.md does not name it (results/{name})")
    for name in sorted(named_here):
        if not re.search(r"[*]|DATE|NAME", name) and not any(name == f or f.startswith(name.rstrip("/") + "/")
                                                              for f in files):
            breaches.append(f"results/{name}: named in RESULTS.md, not in the folder (name it COMMIT:bench/results/...)")
    return breaches


def test_bench_results_keeps_to_its_rule():
    files = {name: (RESULTS / name).stat().st_size for name in tracked() if (RESULTS / name).exists()}
    assert not rule_breaches(files, (ROOT / "bench" / "RESULTS.md").read_text())


@pytest.mark.parametrize("files, text, breach", [
    ({"2026-01-01-cpu-run.log": 10}, "`results/2026-01-01-cpu-run.log`", "not a summary"),
    ({"big.md": MAX_BYTES + 1}, "`results/big.md`", "over 20000"),
    ({"orphan.md": 10}, "nothing", "RESULTS.md does not name it"),
    ({}, "see `results/gone.{md,txt}`", "results/gone.md: named in RESULTS.md, not in the folder"),
], ids=["raw log", "too big", "orphan", "missing"])
def test_each_breach_of_the_rule_is_named(files, text, breach):
    assert any(breach in line for line in rule_breaches(files, text))


def test_a_file_named_at_a_commit_is_not_expected_in_the_folder():
    text = "`results/kept.md`, raw log `5c5a315:bench/results/run.{log,jsonl}`"
    assert rule_breaches({"kept.md": 10}, text) == []


def test_the_raw_files_results_names_are_at_their_commit():
    text = (ROOT / "bench" / "RESULTS.md").read_text()
    named = sorted({(commit, full) for commit, name in AT_COMMIT.findall(text) for full in expand(name)
                    if not re.search(r"[*]|DATE|NAME", full)})
    assert named, "RESULTS.md names no raw file at a commit"
    commits = {commit for commit, _ in named}
    if any(subprocess.run(["git", "cat-file", "-e", f"{c}^{{commit}}"], cwd=ROOT, capture_output=True).returncode
           for c in commits):
        pytest.skip("the commits holding the raw files are not in this clone (a shallow clone)")
    listing = {commit: set(subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "bench/results/"],
                                          cwd=ROOT, capture_output=True, text=True).stdout.split())
               for commit in commits}
    missing = [f"{commit}:bench/results/{name}" for commit, name in named
               if f"bench/results/{name}" not in listing[commit]]
    assert not missing, missing
