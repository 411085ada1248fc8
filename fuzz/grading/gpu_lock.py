"""A GPU shared by several grading drivers: calls share it, a benchmark has it alone."""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["GpuLock"]


class GpuLock:
    """Calls share the GPU (shared lock); a benchmark has it alone (exclusive lock).

    A turnstile file keeps a waiting benchmark from being starved by a stream of calls. The
    benchmark holds the turnstile for at most ``patience`` seconds while it waits: a call that
    hangs while holding its shared lock (until its call timeout) then delays that one benchmark,
    not every other candidate's calls queued behind the turnstile.
    """

    def __init__(self, directory: Path | str, *, gpu: str = "gpu", patience: float = 1.0) -> None:
        # One pair of lock files per physical GPU (``gpu``): drivers spread over several GPUs
        # benchmark on each at once, and only wait for the calls on their own.
        directory = Path(directory)
        self._turnstile = open(directory / f".{gpu}-turnstile.lock", "a+")
        self._main = open(directory / f".{gpu}.lock", "a+")
        self.patience = patience

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        fcntl.flock(self._main, fcntl.LOCK_SH)
        fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        while not self._try_exclusive():
            # A call has held the GPU for a while (a hang, a long compile): let the calls queued
            # behind the turnstile through, then queue again.
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
            time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)

    def _try_exclusive(self) -> bool:
        """Take the turnstile, then wait up to ``patience`` for the exclusive lock; True if held."""
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        deadline = time.monotonic() + self.patience
        while True:
            try:
                fcntl.flock(self._main, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.002)
