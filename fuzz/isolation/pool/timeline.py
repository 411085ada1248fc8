"""An optional timeline of a pool's events, to see where a batch waits.

With ``LSE_FUZZ_TIMELINE`` set to a file, the grading process appends one JSON object a line per
event: ``{"t": seconds since the epoch, "event": ..., ...}``: ``fork_server`` (a fork server
started, its ``pid``), ``start`` (a job handed to a driver: ``key``, ``driver`` pid, ``alone``
when at most one job may run), ``loaded`` (its candidate loaded, its calls begin), ``end`` (its
result: ``outcome``, ``seconds``; a driver's death too), ``cut`` (a job's driver killed at its time
limit, or once a short run showed what it was for) and ``phase`` (what the batch settles: a
suspect run again alone, and why). A batch's log says what was decided, and when; the timeline
says what ran meanwhile: which jobs held the slots while others waited, when a fork server was
started again. Nothing is written without the variable; a file that cannot be written is skipped.
"""

from __future__ import annotations

import json
import os
import time

__all__ = ["TIMELINE_ENV", "note_event"]

TIMELINE_ENV = "LSE_FUZZ_TIMELINE"


def note_event(event: str, **fields) -> None:
    """Append ``event`` with ``fields`` (JSON-serializable) to the timeline, if one is asked for."""
    path = os.environ.get(TIMELINE_ENV)
    if not path:
        return
    line = json.dumps({"t": round(time.time(), 3), "event": event, **fields}, default=str)
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass  # a diagnostic: never the batch's failure
