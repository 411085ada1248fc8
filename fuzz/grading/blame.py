"""A candidate that attacked the grading processes (signals, stops): its verdict is a crash."""

from __future__ import annotations

from ..isolation import SignalEvent, describe_signals, describe_stops
from ..outcomes import Verdict
from .record import GradeRecord

__all__ = ["blame_signals", "what_it_did"]


def blame_signals(record: GradeRecord, events: list[SignalEvent]) -> GradeRecord:
    """A candidate whose processes signalled the grader (SIGTERM, SIGINT, ...; ignored) or stopped
    the grading processes (continued; see :mod:`fuzz.isolation.guard`) crashes, whatever its
    checks said: it attacked the grading."""
    if events:
        graded = f"{record.verdict.value}: {record.reason}"
        what, first = what_it_did(events), graded.splitlines()[0] if graded else ""
        record.verdict, record.check = Verdict.CRASH, None
        record.reason = f"it attacked the grader: it {what} (graded anyway: {first})"
        record.details = f"{what}; graded anyway: {graded}\n{record.details or ''}".rstrip()
    return record


def what_it_did(events: list[SignalEvent]) -> str:
    """'sent SIGTERM to the grader (from pid 7), which ignored it, and stopped the fork server
    (SIGSTOP), which was continued'."""
    sent = [event for event in events if event.stopped is None]
    stops = [event for event in events if event.stopped is not None]
    parts = ([f"{describe_signals(sent)}, which ignored it"] if sent else []) + ([describe_stops(stops)] if stops else [])
    return ", and ".join(parts)
