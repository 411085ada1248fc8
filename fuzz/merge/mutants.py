"""``lse-fuzz mutants --op merge_state``: the bundled mutants of the reference merge kernel
(:data:`mutants.MERGE_NAMES`), each fuzzed as ``lse-fuzz check --op merge_state`` fuzzes a kernel.

The gate first: the unmutated kernel (``reference:merge_state``) must pass, or no kill means
anything (exit 2). Then every mutant runs in a child process of its own, ``--jobs`` at once. A
mutant is killed when its run fails a check, raises, crashes or hangs (Stryker's Killed and
Timeout); the report names the check that killed it beside the one its file expects.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from mutants import MERGE_NAMES
from reference.errors import InvalidArgument

from .. import defaults, validate
from ..outcomes import ExitCode, Verdict
from .child_run import ChildRun, run_in_child
from .command import refuse_row_options, run_options

__all__ = ["MERGE_MUTANT_OPTIONS", "MutantRow", "run_merge_mutants"]

MERGE_MUTANT_OPTIONS = ("names", "budget", "seed", "device", "checks", "shrink_seconds", "jobs", "out_dir", "quiet",
                        "list", "show", "op", "timeout_floor")
"""The options of ``lse-fuzz mutants`` the merge mutants' run takes; the others are the row LSE's."""

_DETECTED = (Verdict.FAIL, Verdict.ERROR, Verdict.CRASH, Verdict.TIMEOUT)
GATE_TARGET = "reference:merge_state"


@dataclass(frozen=True)
class MutantRow:
    name: str
    pitfall: str
    expected: str
    ended: ChildRun

    @property
    def killed(self) -> bool:
        return self.ended.verdict in _DETECTED

    @property
    def check(self) -> str | None:
        return None if self.ended.result is None else self.ended.result.get("check")

    def line(self) -> str:
        if self.ended.internal is not None:
            return f"{self.name:34} INTERNAL ERROR {self.ended.internal}"
        if not self.killed:
            return f"{self.name:34} SURVIVED ({self.ended.verdict.label}) {self.ended.seconds:5.1f} s  {self.pitfall}"
        how = f"by {self.check}" if self.check else f"({self.ended.verdict.label})"
        expected = "" if self.check == self.expected else f", expected {self.expected}"
        return f"{self.name:34} killed {how}{expected}  {self.ended.seconds:5.1f} s  {self.pitfall}"

    def to_dict(self) -> dict:
        return {"name": self.name, "pitfall": self.pitfall, "expected_check": self.expected, "killed": self.killed,
                "verdict": None if self.ended.verdict is None else self.ended.verdict.value, "check": self.check,
                "seconds": round(self.ended.seconds, 3), "report": self.ended.text, "internal": self.ended.internal}


def _data(name: str):
    return importlib.import_module(f"mutants.{name}")


def _pitfall(name: str) -> str:
    return _data(name).__doc__.strip().splitlines()[0].removeprefix("Mutant: ").rstrip(".")


def _diff(name: str) -> str:
    data = _data(name)
    path = Path(__import__("reference").__file__).parent.parent / data.PATH
    before = path.read_text()
    after = before.replace(data.ANCHOR, data.REPLACEMENT, 1)
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{data.PATH}",
                                        f"b/{data.PATH}"))


def _names(args: argparse.Namespace) -> tuple[str, ...]:
    chosen = [*(args.names or MERGE_NAMES), *([args.show] if args.show else [])]
    unknown = [name for name in chosen if name not in MERGE_NAMES]
    if unknown:
        raise InvalidArgument(f"{', '.join(unknown)}: not a merge mutant; choose from {', '.join(MERGE_NAMES)} "
                              "(--op merge_state --list).")
    return tuple(args.names or MERGE_NAMES)


def _options(args: argparse.Namespace, target: str) -> dict:
    return {**run_options(args, "merge_state", reproducer_dir=str(Path(args.out_dir) / "reproducers")), "target": target}


def run_merge_mutants(args: argparse.Namespace) -> int:
    """The exit code: 0 every mutant killed, 1 one was not, 2 the gate failed or bad arguments."""
    refuse_row_options(args, "merge_state", "mutants", MERGE_MUTANT_OPTIONS)
    names = _names(args)
    if args.list or args.show:
        print(_diff(args.show) if args.show else "\n".join(
            f"{name:34} {_data(name).EXPECTED_CHECK:16} {_pitfall(name)}" for name in names))
        return ExitCode.OK
    jobs = os.cpu_count() or 1 if args.jobs is None else validate.integer(args.jobs, name="--jobs", low=1)
    timeout = validate.seconds(max(args.timeout_floor, defaults.OP_RUN_TIMEOUT), name="--mutant-timeout-floor")
    gate = run_in_child(_options(args, GATE_TARGET), timeout=timeout)
    if gate.verdict is not Verdict.PASS:
        print(f"gate failed: the unmutated merge kernel must pass, or no kill means anything\n{gate.text or gate.internal}")
        return ExitCode.USAGE
    with ThreadPoolExecutor(max_workers=min(jobs, len(names))) as pool:
        ended = list(pool.map(lambda name: run_in_child(_options(args, f"mutants.patched:{name}"), timeout=timeout),
                              names))
    rows = [MutantRow(name, _pitfall(name), _data(name).EXPECTED_CHECK, run) for name, run in zip(names, ended)]
    killed = sum(row.killed for row in rows)
    print(f"gate: {GATE_TARGET} passed in {gate.seconds:.1f} s")
    for row in rows:
        print(row.line())
    print(f"merge mutants: {killed} of {len(rows)} killed (score {100 * killed / len(rows):.0f}%)")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "merge-mutation.json").write_text(json.dumps(
        {"op": "merge_state", "gate": {"target": GATE_TARGET, "seconds": round(gate.seconds, 3)},
         "mutants": [row.to_dict() for row in rows], "killed": killed, "total": len(rows)}, indent=2) + "\n")
    if any(row.ended.internal is not None for row in rows):
        return ExitCode.INTERNAL
    return ExitCode.OK if killed == len(rows) else ExitCode.FAILED
