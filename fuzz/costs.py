"""What a run cost: where its seconds went and what it counted.

Every report carries a run's :class:`Costs` (``costs`` in the JSON of ``check``, ``grade``,
``mutants`` and ``lse_fuzz.check``'s :class:`~fuzz.result.CheckResult`): the time split and the
counters that decide a verdict's wait. The counters are deterministic for a seed on one device
(examples, calls, shrink steps, launch classes and specializations), so a test can hold a
fixed-seed run to a budget on them without timing anything; the seconds are what a person waits.

Seconds:

* ``generation``: Hypothesis drawing the examples and building their tensors (all that is not
  an example's body);
* ``calls``: the implementation's own time, compiling excluded;
* ``compiling``: what its worker spent compiling (Triton's JIT, autotuning, torch.compile);
* ``checks``: the oracle and the checks (an example's body less its calls and compiles);
* ``shrinking``: from the first failure to the end of the run (part of the three above);
* ``worker_start``: starting the isolated worker and loading the target (``check``, ``grade``).

Counters:

* ``examples``, ``calls``: examples run to the end or to their failure, calls of the implementation;
* ``shrink_steps``: candidates the shrinker tried; ``shrink_deferred``: those skipped because
  they needed a launch class the run had not compiled (:mod:`fuzz.shrinking`);
* ``launch_classes``: the distinct launch classes of the examples run (:func:`fuzz.shrinking.launch_class`);
* ``specializations``: the distinct Triton specialization keys the implementation launched
  (:func:`fuzz.interpreter.specialization.launched`): the binaries a GPU compiles for them, counted on any device;
  ``shrink_specializations``: those first launched while shrinking (each a compile on a GPU);
* ``compiles``: the compiles its worker reported (on a GPU; the interpreter compiles nothing).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

__all__ = ["Costs"]

_SECONDS = ("generation", "calls", "compiling", "checks", "shrinking", "worker_start")
_COUNTERS = ("examples", "calls", "shrink_steps", "shrink_deferred", "launch_classes", "specializations",
             "shrink_specializations", "compiles")


@dataclass
class Costs:
    """A run's time split (seconds) and counters; :meth:`add` sums the parts of a run."""

    generation_seconds: float = 0.0
    call_seconds: float = 0.0
    compile_seconds: float = 0.0
    check_seconds: float = 0.0
    shrink_seconds: float = 0.0
    worker_start_seconds: float = 0.0
    examples: int = 0
    calls: int = 0
    shrink_steps: int = 0
    shrink_deferred: int = 0
    launch_classes: int = 0
    specializations: int = 0
    shrink_specializations: int = 0
    compiles: int = 0
    shrink_stopped: bool = False  # shrinking ran out of its budget: the counterexample is the smallest found by then

    def add(self, other: Costs) -> Costs:
        """The sum of two parts' costs (each part has a worker and compiles of its own)."""
        summed = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)
                  if f.name != "shrink_stopped"}
        return Costs(**summed, shrink_stopped=self.shrink_stopped or other.shrink_stopped)

    __add__ = add

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        return {
            "seconds": {name: round(float(data[_field(name)]), 3) for name in _SECONDS},
            **{name: int(data[name]) for name in _COUNTERS if name != "calls"},
            "calls": int(self.calls),
            "shrink_stopped": self.shrink_stopped,
        }

    @classmethod
    def from_dict(cls, data: dict | None) -> Costs:
        if not data:
            return cls()
        seconds = data.get("seconds") or {}
        return cls(**{_field(name): float(seconds.get(name, 0.0)) for name in _SECONDS},
                   **{name: int(data.get(name, 0)) for name in _COUNTERS},
                   shrink_stopped=bool(data.get("shrink_stopped", False)))

    def describe(self) -> str:
        """One line for a person: 'generation 1.2 s, calls 3.4 s, ...; 120 examples, 7 specializations'."""
        data = self.to_dict()
        spent = ", ".join(f"{name.replace('_', ' ')} {value:.1f} s" for name, value in data["seconds"].items() if value)
        counted = f"{self.examples} examples, {self.calls} calls, {self.specializations} specializations"
        if self.compiles:
            counted += f", {self.compiles} compiles"
        if self.shrink_steps:
            counted += f", {self.shrink_steps} shrink steps"
        return f"{spent or 'no time'}; {counted}"


def _field(name: str) -> str:
    return {"calls": "call_seconds", "compiling": "compile_seconds", "checks": "check_seconds",
            "shrinking": "shrink_seconds", "generation": "generation_seconds",
            "worker_start": "worker_start_seconds"}[name]
