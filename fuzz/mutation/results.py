"""What a mutation analysis found: the gate's results, one result per mutant, the whole report.

Every mutant (and every gate entry) is graded exactly like a candidate of ``lse-fuzz grade``; its
:class:`Cell` keeps that grading record (a :class:`~fuzz.grading.GradeRecord`), and
:func:`fuzz.outcomes.mutant_status` maps it to a :class:`~fuzz.outcomes.MutantStatus` (a mutant whose
edit never ran is not graded: its record's verdict is ``not_run``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from lse_fuzz._errors import LseFuzzError

from ..grading.record import GradeRecord, MalformedRecord
from ..memory.phase import describe as describe_memory
from ..outcomes import MutantStatus, Verdict, mutant_status
from .mutant import Mutant
from .sites import Kernel

__all__ = ["Cell", "ExitRule", "GateFailure", "GateResult", "MutantResult", "MutationReport", "TestsVerdict"]


class ExitRule(str, enum.Enum):
    """When a run's exit status is 1 (0 otherwise; 2 is a failed gate or bad input, before any score)."""

    ALL_KILLED = "all-killed"  # lse-fuzz mutants: each bundled bug must be caught by a check
    FAIL_UNDER = "fail-under"  # lse-fuzz mutate: the score is below --fail-under (never, without one)


@dataclass
class Cell:
    """One graded run: a target against a set of checks (all of them, or one in a kill matrix)."""

    checks: tuple[str, ...]
    record: GradeRecord
    wall_seconds: float

    @classmethod
    def kept(cls, record: dict, wall_seconds: float) -> Cell | None:
        """The cell of a cached record (its JSON); None for one that is not a grading record of this
        release (a mutant that never ran was cached as a bare "pass" before not_run): judged again."""
        try:
            return cls((), GradeRecord.from_json(record), wall_seconds)
        except MalformedRecord:
            return None

    @property
    def status(self) -> MutantStatus:
        return mutant_status(self.record.verdict, self.record.exception or ())

    @property
    def reason(self) -> str:
        """The failure message of the killing check, or what else happened (with the worker's stderr)."""
        record = self.record
        if record.verdict is Verdict.NOT_RUN:
            return record.reason
        if record.verdict is Verdict.FAIL:
            return record.details or record.reason
        if record.verdict is Verdict.PASS:
            return f"no check failed in {record.examples or 0} examples"
        reason = record.reason
        details = (record.details or "").strip()
        if details and details not in reason:
            tail = "\n".join("    " + line for line in details.splitlines()[-12:])
            reason += "\n  details (last lines):\n" + tail
        if record.memory:  # a GPU's crash goes to the memory phase: what it ran, and why it found nothing
            reason += "\n  " + describe_memory(record.memory)
        return reason

    @property
    def check(self) -> str | None:
        return self.record.check

    @property
    def examples(self) -> int:
        return int(self.record.examples or 0)

    @property
    def seconds(self) -> float:
        """Seconds the checks ran (the time to kill, for a killed mutant; of every part run, for a
        run in parts); wall time otherwise."""
        parts = self.record.parts
        if parts and all(part.get("check_seconds") is not None for part in parts):
            return float(sum(part["check_seconds"] for part in parts))
        result = self.record.result or {}
        return float(result.get("seconds") or self.wall_seconds)

    @property
    def counterexample(self) -> str | None:
        example = self.record.counterexample
        return example.get("description") if isinstance(example, dict) else None

    @property
    def reproducer(self) -> str | None:
        return self.record.reproducer

    @property
    def replay(self) -> str | None:
        return self.record.replay


@dataclass
class GateResult:
    label: str
    target: str
    must: str  # "pass" or "fail"
    cell: Cell

    @property
    def ok(self) -> bool:
        if self.must == "pass":
            return self.cell.status is MutantStatus.SURVIVED
        return self.cell.status is MutantStatus.KILLED

    def describe(self) -> str:
        verdict = {MutantStatus.SURVIVED: "passed", MutantStatus.KILLED: f"caught by {self.cell.check!r}"}.get(
            self.cell.status, self.cell.status.value)
        return (f"{'ok' if self.ok else 'FAILED'}: {self.label} ({self.target}) must {self.must}: {verdict}, "
                f"{self.cell.examples} examples, {self.cell.wall_seconds:.1f} s")


@dataclass
class TestsVerdict:
    """What the user's test command (``--tests``) did with one mutant."""

    status: MutantStatus  # Killed (non-zero exit), Survived (exit 0) or Timeout
    exit: int | None
    seconds: float
    output: str

    @classmethod
    def of(cls, record: dict) -> TestsVerdict:
        if record.get("timeout"):
            status = MutantStatus.TIMEOUT
        else:
            status = MutantStatus.SURVIVED if record.get("exit") == 0 else MutantStatus.KILLED
        return cls(status, record.get("exit"), float(record.get("seconds") or 0.0), record.get("output") or "")


@dataclass
class MutantResult:
    """One mutant's verdict: ``cell``, the run that decides it (in a matrix run, the expected check's
    if it killed, else another killing check's, else the worst thing that happened), and ``matrix``,
    every check's run (None outside a matrix run)."""

    mutant: Mutant
    cell: Cell
    matrix: dict[str, Cell] | None = None

    @property
    def name(self) -> str:
        return self.mutant.name

    @property
    def status(self) -> MutantStatus:
        return self.cell.status

    @property
    def reason(self) -> str:
        return self.cell.reason

    @property
    def killed_by(self) -> list[str]:
        """The check that killed it; in a matrix run, every check that did."""
        if self.matrix is not None:
            return [check for check, cell in self.matrix.items() if cell.status is MutantStatus.KILLED]
        return [self.cell.check] if self.status is MutantStatus.KILLED and self.cell.check else []

    @classmethod
    def of(cls, mutant, cells: list[Cell], matrix: bool) -> MutantResult:
        if not matrix:
            return cls(mutant, cells[0])
        by_check = {cell.checks[0]: cell for cell in cells}
        worst = (MutantStatus.KILLED, MutantStatus.TIMEOUT, MutantStatus.RUNTIME_ERROR, MutantStatus.COMPILE_ERROR,
                 MutantStatus.IGNORED, MutantStatus.SURVIVED)
        expected = by_check.get(mutant.expected_check)
        if expected is not None and expected.status is MutantStatus.KILLED:
            return cls(mutant, expected, by_check)
        return cls(mutant, min(cells, key=lambda cell: worst.index(cell.status)), by_check)


@dataclass
class MutationReport:
    """Everything one analysis found (:func:`fuzz.mutation.write_reports` writes it)."""

    results: list[MutantResult]
    gate: list[GateResult]
    config: dict[str, object]
    baseline_seconds: float
    timeout_seconds: float
    gate_seconds: float  # from the start until the gate's verdict
    mutation_seconds: float  # from the gate's verdict until the last mutant's
    setup_seconds: float = 0.0
    matrix: bool = False
    kernel: Kernel | None = None
    tests: dict[str, TestsVerdict] | None = None  # mutant name -> the user's tests' verdict
    thorough: set[str] = field(default_factory=set)  # mutants graded again with lse-thorough
    retried: set[str] = field(default_factory=set)  # mutants run again after a timeout
    reused: int = 0  # verdicts taken from the cache
    judged: int = 0  # verdicts decided in this run
    command: str = ""
    exit_rule: ExitRule = ExitRule.ALL_KILLED
    fail_under: float | None = None

    def count(self, status: MutantStatus) -> int:
        return sum(result.status is status for result in self.results)

    @property
    def detected(self) -> int:
        return sum(result.status.detected for result in self.results)

    @property
    def valid(self) -> int:
        return sum(result.status.valid for result in self.results)

    @property
    def score(self) -> float | None:
        """detected / valid in percent (Stryker); None when no mutant is valid."""
        return 100.0 * self.detected / self.valid if self.valid else None

    @property
    def all_killed(self) -> bool:
        return all(result.status is MutantStatus.KILLED for result in self.results)

    @property
    def survivors(self) -> list[MutantResult]:
        return [r for r in self.results if r.status is MutantStatus.SURVIVED]

    def tests_killed(self) -> int:
        return sum(v.status.detected for v in (self.tests or {}).values())

    @property
    def exit_code(self) -> int:
        """0 or 1 by :attr:`exit_rule`."""
        if self.exit_rule is ExitRule.ALL_KILLED:
            return 0 if self.all_killed else 1
        return int(self.fail_under is not None and (self.score or 0.0) < self.fail_under)

    @property
    def total_seconds(self) -> float:
        return self.setup_seconds + self.gate_seconds + self.mutation_seconds

    def summary(self) -> str:
        score = "n/a" if self.score is None else f"{self.score:.1f}%"
        counts = ", ".join(f"{self.count(status)} {status.value}" for status in MutantStatus if self.count(status))
        return (f"mutation score {score} ({self.detected} detected of {self.valid} valid; {counts}) "
                f"in {self.total_seconds:.1f} s")


class GateFailure(LseFuzzError):
    """The suite failed the gate: a correct kernel failed, or a broken one passed. Nothing scored."""

    def __init__(self, gate: list[GateResult]) -> None:
        self.gate = gate
        lines = ["the fuzz suite failed the gate, so no mutant was scored:"]
        for entry in gate:
            lines.append("  " + entry.describe())
            if not entry.ok:
                lines.extend("    " + line for line in entry.cell.reason.splitlines()[:40])
        lines.append("fix the suite (or the reference kernel) first: a suite that fails the correct kernel, or "
                     "passes a broken one, cannot tell a killed mutant from noise")
        super().__init__("\n".join(lines))
