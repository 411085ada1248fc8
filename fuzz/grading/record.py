"""The grading record: what became of one candidate, as ``check --json`` writes it, ``grade``
writes one per line to ``grade.jsonl`` and ``--resume`` reads it back.

:class:`GradeRecord` is that record typed. Its JSON (:meth:`GradeRecord.to_json`) is the report's
shape, key for key; :meth:`GradeRecord.from_json` reads a report line back and refuses one that is
not what the grader writes (a report file is input like any other: edited by hand, cut short, or
rewritten by a candidate that got at it), naming the field. ``result`` (the fuzz run's
:meth:`fuzz.result.CheckResult.to_dict`) and ``parts`` (a run in parts) are written only when there
is one. Other keys (a Ray ``node``, the report's ``seal``) ride along in :attr:`extra` unchanged,
so that a record read and written again is the same JSON, byte for byte: the seal of a report
with a private seed (:mod:`.seal`) still verifies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lse_fuzz._errors import LseFuzzError

from .._version import __version__
from ..outcomes import Verdict

__all__ = ["GradeRecord", "MalformedRecord"]

_NUMBER = (int, float)
_NONE = type(None)


class MalformedRecord(LseFuzzError, ValueError):
    """A report line that is not a record the grader writes; the message names the field."""


@dataclass
class GradeRecord:
    """One candidate's grading. ``verdict`` is None only while it is being graded."""

    candidate: str  # the name shown (a file name, or file.py:function)
    target: str  # what was loaded: path/to/file.py:function
    sha256: str | None  # of the file graded (None: a module, or no file): --resume keeps a record of an unchanged file
    key: str  # of the options that decide a verdict: --resume keeps a record only for the same
    verdict: Verdict | None = None
    check: str | None = None  # the check that failed
    reason: str = ""  # one line: why this verdict
    details: str = ""  # the failure message, traceback or worker stderr
    exception: list | None = None  # the exception chain (fuzz.failures.exception_chain), outermost first
    counterexample: dict | None = None
    reproducer: str | None = None  # the saved failing example
    replay: str | None = None  # the command that replays it
    examples: int | None = None
    calls: int = 0
    seconds: float = 0.0  # the whole grading
    candidate_seconds: float = 0.0  # of those, inside the candidate's calls
    flags: list = field(default_factory=list)  # findings beside the verdict: {"flag", "severity", "message", ...}
    slow: list = field(default_factory=list)  # calls far slower than reference.lse: {"seconds", ...}
    compiles: dict | None = None  # what the worker compiled (fuzz.timing.compile_summary)
    noise: dict | None = None  # what the candidate printed
    bench: dict | None = None  # bandwidth on CUDA, or {"error": ...}
    shape_fit: dict | None = None  # the element cap fitted to a slow interpreted kernel: {"description", ...}
    seed: int | None = None
    seed_id: str | None = None  # names the seed without giving a private one away
    options: dict = field(default_factory=dict)  # GradeOptions.public()
    tool: str = __version__  # the lse-fuzz version that graded it
    result: dict | None = None  # the fuzz run (CheckResult.to_dict); absent from the JSON when there was none
    parts: list | None = None  # a run in parts: each part's verdict, check, examples and time; absent if not
    costs: dict | None = None  # where the run's time went, and its counters (fuzz.costs.Costs); absent if no run
    memory: dict | None = None  # the GPU's memory phase (fuzz.memory.MemoryReport.to_dict); absent if it did not run
    extra: dict = field(default_factory=dict)  # every other key of the JSON, kept as read

    def to_json(self) -> dict[str, object]:
        """The record as the reports hold it (a dict of JSON values)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        data["verdict"] = None if self.verdict is None else self.verdict.value
        for name in _WHEN_GIVEN:
            if data[name] is None:
                del data[name]
        return {**data, **self.extra}

    @classmethod
    def from_json(cls, data: object) -> GradeRecord:
        """The record of a report line; :class:`MalformedRecord` naming the field if it is not one
        the grader writes (each typed field present with its type, a known verdict)."""
        if not isinstance(data, dict):
            raise MalformedRecord(f"a record is a JSON object, not {type(data).__name__}")
        for name, types in _TYPES.items():
            if name in _REQUIRED or name in data:
                value = data.get(name)
                if not isinstance(value, types) or isinstance(value, bool):
                    raise MalformedRecord(f"{name}={value!r}: expected {' or '.join(t.__name__ for t in types)}")
        if data["verdict"] not in {v.value for v in Verdict}:
            raise MalformedRecord(f"verdict={data['verdict']!r}: not a verdict")
        if not all(isinstance(f, dict) and isinstance(f.get("flag"), str) for f in data["flags"]):
            raise MalformedRecord("flags: each must be an object with a flag name")
        if data["shape_fit"] is not None and not isinstance(data["shape_fit"].get("description"), str):
            raise MalformedRecord("shape_fit: it has no description")
        if not all(isinstance(c, dict) and isinstance(c.get("seconds"), _NUMBER) for c in data["slow"]):
            raise MalformedRecord("slow: each call must be an object with its seconds")
        known = {f.name for f in dataclasses.fields(cls)} - {"extra", "verdict"}
        return cls(**{name: value for name, value in data.items() if name in known},
                   verdict=Verdict(data["verdict"]),
                   extra={name: value for name, value in data.items() if name not in known | {"verdict"}})

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS


# What a report line must hold, and of which type (bool is refused where a number or text is due).
_TYPES: dict[str, tuple[type, ...]] = {
    "candidate": (str,), "target": (str,), "sha256": (str, _NONE), "verdict": (str,), "key": (str,),
    "reason": (str,), "details": (str,), "check": (str, _NONE), "replay": (str, _NONE),
    "reproducer": (str, _NONE), "examples": (int, _NONE), "calls": (int,), "seconds": _NUMBER,
    "candidate_seconds": _NUMBER, "flags": (list,), "slow": (list,), "counterexample": (dict, _NONE),
    "noise": (dict, _NONE), "bench": (dict, _NONE), "exception": (list, _NONE), "shape_fit": (dict, _NONE),
    "compiles": (dict, _NONE), "seed": (int, _NONE), "seed_id": (str, _NONE), "options": (dict,), "tool": (str,),
    "result": (dict,), "parts": (list,), "costs": (dict,), "memory": (dict,),
}
_WHEN_GIVEN = ("result", "parts", "costs", "memory")  # written only when not None
# Present in every record the grader has written (the others default when an older report lacks them).
_REQUIRED = {"candidate", "target", "sha256", "verdict", "key", "reason", "details", "check", "replay", "reproducer",
             "examples", "calls", "seconds", "candidate_seconds", "flags", "slow", "counterexample", "noise",
             "bench", "exception", "shape_fit"}
