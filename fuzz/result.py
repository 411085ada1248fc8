"""What a run of :func:`fuzz.runner.check` found: :class:`CheckResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from .checks import Plan
from .contract import Contract
from .costs import Costs
from .failures import CheckFailure, ImplError, Unsupported
from .outcomes import Status, verdict_of
from .strategies import LseInput
from .timing import SLOW_FACTOR, SLOW_FLOOR, Compile, SlowCall, describe_compiles

__all__ = ["CheckResult"]


@dataclass
class CheckResult:
    """What a run found. ``failure`` is a CheckFailure (FAILED, FLAKY), an ImplError (ERROR) or an
    Unsupported (UNSUPPORTED: the CPU's emulation cannot run a construct the implementation uses)."""

    status: Status
    examples: int
    seconds: float
    target: str
    seed: int
    budget: int
    contract: Contract
    checks: tuple[str, ...]
    failure: CheckFailure | ImplError | Unsupported | None = None
    counterexample: LseInput | None = None
    plan: Plan | None = None
    reproducer: Path | None = None
    notes: list[str] = field(default_factory=list)
    slow: list[SlowCall] = field(default_factory=list)  # calls far slower than reference.lse (findings, not failures)
    tuning: list[str] = field(default_factory=list)  # the autotuned kernels found, one config pinned per example
    compiles: list[Compile] = field(default_factory=list)  # what an isolated worker compiled (never timed as calls)
    costs: Costs = field(default_factory=Costs)  # where the run's time went, and its counters (fuzz.costs)
    largest: dict | None = None  # the largest 2-D input drawn: shape, dtype, layout, description (the memory phase's)

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def check(self) -> str | None:
        """The failing check's name (None when passed or when the implementation raised)."""
        return self.failure.check if isinstance(self.failure, CheckFailure) else None

    @property
    def error(self) -> str | None:
        """The implementation's traceback text when it raised."""
        return self.failure.text if isinstance(self.failure, ImplError) else None

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else math.inf

    def summary(self) -> str:
        """The report, headed by the verdict as ``lse-fuzz check`` spells it (PASS, FAIL, ERROR,
        UNSUPPORTED; a flaky failure is a FAIL, and a note says it did not reproduce)."""
        pace = f"{self.examples} examples in {self.seconds:.1f} s ({self.examples_per_second:.1f}/s)"
        verdict = verdict_of(status=self.status).label
        if self.passed:
            head = (f"{verdict} {self.target}: {pace}; checks: {', '.join(self.checks)}; "
                    f"contract {self.contract.describe()}; seed {self.seed}")
            return "\n".join([head, *self._tuning_lines(), *self._slow_lines()])
        what = f"check {self.check!r}" if self.check else "the implementation raised"
        if isinstance(self.failure, Unsupported):
            what = "no verdict on the CPU"
        lines = [f"{verdict} {self.target}: {what} after {pace}; seed {self.seed}"]
        lines.extend(self.notes)
        if self.failure is not None:
            lines.append(self.failure.message())
        lines.extend(self._slow_lines())
        return "\n".join(lines)

    def _tuning_lines(self) -> list[str]:
        if not self.tuning:
            return []
        return ["autotuned kernels, one configuration pinned per example: " + "; ".join(self.tuning)]

    def _slow_lines(self) -> list[str]:
        compiles = describe_compiles(self.compiles)
        lines = [compiles] if compiles else []
        if not self.slow:
            return lines
        slowest = max(self.slow, key=lambda call: call.seconds)
        return [f"slow (a finding, not a failure): {len(self.slow)} call(s) over {SLOW_FACTOR:g} x reference.lse "
                f"on the same input; the slowest: {slowest.describe()}", *lines]

    def to_dict(self) -> dict[str, object]:
        example = self.counterexample
        return {
            "status": self.status.value,
            "passed": self.passed,
            "check": self.check,
            "target": self.target,
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
            "examples_per_second": round(self.examples_per_second, 2) if self.seconds > 0 else None,
            "seed": self.seed,
            "budget": self.budget,
            "contract": self.contract.to_dict(),
            "checks": list(self.checks),
            "failure": None if self.failure is None else self.failure.to_dict(),
            "error": self.error,
            "counterexample": None if example is None else {
                "description": example.describe(),
                "shape": list(example.shape),
                "dtype": str(example.dtype).replace("torch.", ""),
                "layout": example.layout.to_dict(),
                "recipes": [str(spec) for spec in example.specs],
                **({} if example.batch is None else {"batch": example.batch.to_dict()}),
            },
            "plan": None if self.plan is None else self.plan.to_dict(),
            "reproducer": None if self.reproducer is None else str(self.reproducer),
            "largest": self.largest,
            "notes": list(self.notes),
            "slow": [call.to_dict() for call in self.slow],
            "compiles": [c.to_dict() for c in self.compiles if c.seconds > SLOW_FLOOR],
            "compile_count": len(self.compiles),
            "compile_seconds": round(sum(c.seconds for c in self.compiles), 3),
            "tuning": list(self.tuning),
            "costs": self.costs.to_dict(),
        }
