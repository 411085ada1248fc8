"""CPU slots shared by every run of one user on the machine, for the parts of a run.

A run of several parts (:mod:`fuzz.grading.parts`) runs them side by side, each in a worker of its
own. Several runs started together (a script, a CI matrix, ``pytest -n auto``, eight checks on a
GPU host) would each start a worker per part, and their compiles and interpreters would fight for
the same CPUs. Measuring the idle CPUs when a run starts does not help: runs started together all
see an idle machine, and a run's own start (its fork server importing torch) looks like someone
else's load.

So the machine has one slot per CPU: a lock file each, in a directory every lse-fuzz process of the
user shares. A run takes, without waiting, up to one free slot per part; its parts run as many at
once as it holds slots (at least one: a run never waits for a slot, it runs its parts one after
the other). A slot is an ``flock``: it frees itself when its holder exits, however it exits, so a
killed run never leaves a slot taken.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

__all__ = ["Slots", "default_directory", "take"]


def default_directory() -> Path:
    """Where the slots' lock files live: one directory per user, under the temporary directory."""
    return Path(tempfile.gettempdir()) / f"lse-fuzz-cpu-slots-{os.getuid()}"


class Slots:
    """Slots held by this process (a context manager: released on exit)."""

    def __init__(self, files: list[int]) -> None:
        self._files = files

    def __len__(self) -> int:
        return len(self._files)

    def one_each(self) -> list[Slots]:
        """These slots as one ``Slots`` per slot (this one left empty): each can be handed on and
        released by itself."""
        files, self._files = self._files, []
        return [Slots([fd]) for fd in files]

    def release(self) -> None:
        for fd in self._files:
            os.close(fd)  # closing the file drops its lock
        self._files = []

    def __del__(self) -> None:  # like a file object: dropped, its slots go back
        self.release()

    def __enter__(self) -> Slots:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def take(wanted: int, *, directory: Path | None = None, cpus: int | None = None) -> Slots:
    """Up to ``wanted`` of the machine's ``cpus`` slots (default: its CPU count) that no process
    holds now, without waiting; none where the directory cannot be written (then nothing is shared,
    and the caller runs as if every slot were taken)."""
    directory = default_directory() if directory is None else Path(directory)
    cpus = cpus or os.cpu_count() or 1
    held: list[int] = []
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return Slots(held)
    for index in range(cpus):
        if len(held) >= wanted:
            break
        try:
            fd = os.open(directory / f"slot-{index}", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process holds this one
            os.close(fd)
            continue
        held.append(fd)
    return Slots(held)
