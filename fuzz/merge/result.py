"""What a run of an op (:func:`fuzz.merge.runner.check_op`) found: :class:`OpResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..failures import ImplError, Unsupported
from ..outcomes import Status, verdict_of
from .checks import MergeFailure

__all__ = ["OpResult"]


@dataclass
class OpResult:
    """A run's verdict: ``failure`` is a MergeFailure (FAILED, FLAKY), an ImplError (ERROR) or an
    Unsupported (UNSUPPORTED); ``counterexample`` the input it happened on, saved at ``reproducer``."""

    op: str
    status: Status
    examples: int
    seconds: float
    target: str
    seed: int
    budget: int
    base: str | int
    checks: tuple[str, ...]
    failure: MergeFailure | ImplError | Unsupported | None = None
    counterexample: object | None = None
    reproducer: Path | None = None
    replay: str | None = None
    notes: list[str] = field(default_factory=list)
    shrink_seconds: float = 0.0
    shrink_stopped: bool = False
    layouts: tuple[str, ...] = ()  # the layouts drawn (empty: every layout)

    @property
    def declared(self) -> str:
        """What the run assumed of the kernel, as the report's heading says it."""
        return f"--op {self.op}, LSE base {self.base}" + (", contiguous tensors only" if self.layouts == ("contiguous",)
                                                           else "")

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def check(self) -> str | None:
        """The failing check's name (None when passed or when the implementation raised)."""
        return self.failure.check if isinstance(self.failure, MergeFailure) else None

    def summary(self) -> str:
        """The report, headed by the verdict as ``lse-fuzz check`` spells it (PASS, FAIL, ERROR, UNSUPPORTED)."""
        verdict = verdict_of(status=self.status).label
        pace = f"{self.examples} examples in {self.seconds:.1f} s"
        if self.passed:
            return (f"{verdict} {self.target} ({self.declared}): {pace}; checks: "
                    f"{', '.join(self.checks)}; seed {self.seed}")
        what = f"check {self.check!r}" if self.check else "the implementation raised"
        if isinstance(self.failure, Unsupported):
            what = "no verdict on the CPU"
        lines = [f"{verdict} {self.target} ({self.declared}): {what} after {pace}; "
                 f"seed {self.seed}", *self.notes]
        if isinstance(self.failure, MergeFailure):
            lines.append(str(self.failure))
        elif self.failure is not None:
            lines.append(self.failure.message())
        if self.replay and isinstance(self.failure, MergeFailure):
            lines.append(f"  replay:   {self.replay}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        failure = None
        if isinstance(self.failure, MergeFailure):
            failure = {"check": self.failure.check, "detail": self.failure.detail, "replay": self.replay}
        elif self.failure is not None:
            failure = self.failure.to_dict()
        return {
            "op": self.op, "status": self.status.value, "passed": self.passed, "check": self.check,
            "target": self.target, "examples": self.examples, "seconds": round(self.seconds, 3), "seed": self.seed,
            "budget": self.budget, "lse_base": str(self.base), "layouts": list(self.layouts), "checks": list(self.checks),
            "failure": failure,
            "counterexample": None if self.counterexample is None else {"description": self.counterexample.describe()},
            "reproducer": None if self.reproducer is None else str(self.reproducer), "notes": list(self.notes),
            "shrink_seconds": round(self.shrink_seconds, 3), "shrink_stopped": self.shrink_stopped,
        }
