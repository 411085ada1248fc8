"""Linux process plumbing shared by the fork server, the Child handle and the guard: ``prctl``,
killing a process group, and reading a process's ``/proc/PID/stat`` and children.

Standard library only: the fork server and the command line's first step (the guard) import it
before anything heavy.
"""

from __future__ import annotations

import ctypes
import os
import signal

__all__ = ["PR_GET_CHILD_SUBREAPER", "PR_SET_CHILD_SUBREAPER", "PR_SET_PDEATHSIG", "child_pids", "kill_group", "prctl",
           "stat_fields"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


def prctl(option: int, value: int) -> None:
    """Linux prctl(2) with one argument (a number, or an address as a number); a no-op elsewhere."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, ctypes.c_ulong(value), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def kill_group(pid: int) -> None:
    """SIGKILL ``pid``'s process group (a child of the fork server leads its own session, so its
    group holds what it started), then ``pid`` itself (in case it left its group); a process
    already gone, or not ours to signal, is no error."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def stat_fields(pid: int | str = "self") -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name, so ``[0]`` is field 3 (the state)
    and ``[n - 3]`` field n of stat(5); None when the process is gone or the file unreadable. The
    command name (field 2) may hold spaces and parentheses: the fields are counted after its last ')'."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def child_pids(pid: int | str = "self") -> list[int]:
    """``pid``'s children, of any of its threads (zombies included: they stay children until
    reaped); none when the process is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found += [int(child) for child in listed.read().split()]
        except (OSError, ValueError):
            continue
    return found
