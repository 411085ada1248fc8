"""A worker that looks like an ordinary ``python3`` process from the inside.

A worker is forked from the fork server, so it inherits the server's command line (``python -c``
and a boot line that names this package) in ``/proc/self/cmdline``, ``sys.argv`` and
``sys.orig_argv``: a candidate reading them learns it is being graded and can behave. The kernel
reads ``/proc/PID/cmdline`` from the process's own memory (the original argument strings, between
``arg_start`` and ``arg_end`` of ``/proc/PID/stat``), so overwriting those bytes in place rewrites
it, as ``setproctitle`` does; no privilege is needed.

What this cannot hide (see the README's threat model): the grader's modules in ``sys.modules``,
and the command lines of the parent processes.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["NEUTRAL_NAME", "look_ordinary"]

NEUTRAL_NAME = "python3"


def _argument_area() -> tuple[int, int] | None:
    """(arg_start, arg_end) of this process, from /proc/self/stat; None where unreadable."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    fields = stat[stat.rindex(b")") + 2:].split()
    try:
        start, end = int(fields[48 - 3]), int(fields[49 - 3])  # fields 48 and 49, 1-based; fields[0] is 3
    except (IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def look_ordinary() -> bool:
    """Make this process's command line read ``python3``; False if /proc/self/cmdline could not
    be rewritten (sys.argv and sys.orig_argv are, in any case)."""
    sys.argv[:] = [""]  # what an interactive python3 has
    if hasattr(sys, "orig_argv"):
        sys.orig_argv[:] = [NEUTRAL_NAME]
    area = _argument_area()
    if area is None:
        return False
    start, end = area
    name = NEUTRAL_NAME.encode()
    if end - start <= len(name):
        return False
    # The area holds argv's strings back to back; NUL bytes after the name end the first argument,
    # and nothing readable follows it.
    ctypes.memmove(start, name + b"\0" * (end - start - len(name)), end - start)
    return True
