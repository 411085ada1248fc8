"""Wiping the private seed from what other processes can read of the grader: its ``/proc``
environment and command line.

A candidate runs as the grader's user, so it can read ``/proc/PID/environ`` and
``/proc/PID/cmdline`` of every process of that user, another run's grader included. Those files
show the strings a process started with, not ``os.environ``: popping a variable hides nothing, the
memory they are read from is overwritten instead. :func:`scrub_early` does it as the command's
first step, before torch and the rest are imported (about a second), so that a grader started
while another run's candidates are running holds the secret there only while Python starts.
Standard library only: it runs before anything heavy is imported.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["scrub_early", "scrub_from_proc"]

OPTION = "--private-seed"


def scrub_from_proc(secret: str) -> None:
    """Overwrite ``secret`` with ``*`` in the memory /proc/PID/environ and /proc/PID/cmdline of
    this process read. Linux only; a no-op elsewhere."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # Fields 48-51 of stat(5) (the first after the command's ')' is field 3).
        regions = [(int(fields[45]), int(fields[46])), (int(fields[47]), int(fields[48]))]
    except (OSError, ValueError, IndexError):
        return
    needle = secret.encode()
    for start, end in regions:
        if not 0 < start < end:
            continue
        memory = ctypes.string_at(start, end - start)
        found = memory.find(needle)
        while found >= 0:
            ctypes.memset(start + found, ord("*"), len(needle))
            found = memory.find(needle, found + len(needle))


def scrub_early(argv: list[str]) -> None:
    """The secret ``argv`` names with ``--private-seed`` (given, or ``env:NAME``), wiped from
    /proc at once; the option itself is read and checked later, as any other. ``file:PATH`` puts
    only a path there. Never raises: a bad value gets its message from the option's own check."""
    for index, arg in enumerate(argv):
        if arg == OPTION and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(OPTION + "="):
            value = arg[len(OPTION) + 1:]
        else:
            continue
        if value.startswith("env:"):
            value = os.environ.get(value[4:], "")
        elif value.startswith("file:"):
            continue
        if value:
            try:
                scrub_from_proc(value)
            except Exception:  # noqa: BLE001 - the later scrub of fuzz.commands.check runs anyway
                pass
