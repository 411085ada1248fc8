"""The input's memory, shared with the worker: whether a call changed it is decided here.

A CPU worker's input tensor is a view of a file mapping this process made and keeps mapped. After
each call the parent compares the mapping with its own tensor (the bytes it sent), so a candidate
that patches whatever the worker compares with (``torch.equal``, a copy it keeps) and then writes
into its input is seen all the same: nothing in the candidate's process is asked.

Each new input tensor gets a new file, unlinked once the worker has mapped it: the worker's old
mapping stays valid (a candidate that keeps an old input reads it, never a SIGBUS), and nothing
is left on disk. CUDA inputs and huge-offset views still travel as bytes and the worker compares
them (see the threat model in the README).
"""

from __future__ import annotations

import mmap
import os
import tempfile

import torch

__all__ = ["SharedInput"]


def _directory() -> str | None:
    """Memory-backed files where the system has them (no disk writes for every input)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class SharedInput:
    """The mapping of the input in flight (one at a time, as the worker holds one)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self._mapping: mmap.mmap | None = None
        self._path: str | None = None

    def place(self, spec: dict, frame: memoryview) -> bool:
        """Put the input's storage bytes where the worker maps them; ``spec`` gets the path of a
        new mapping. False when this input travels as bytes instead."""
        size = memoryview(frame).nbytes
        if spec.get("mode") != "storage" or not size:
            self.drop()
            return False
        key = repr(spec["key"])
        if key != self.key or self._mapping is None or len(self._mapping) != size:
            self.drop()
            fd, self._path = tempfile.mkstemp(prefix="input-", dir=_directory())
            try:
                os.ftruncate(fd, size)
                self._mapping = mmap.mmap(fd, size)
            finally:
                os.close(fd)
            self.key = key
            spec["shared"] = self._path
        self._mapping[:] = frame  # the same tensor again: its current contents (fresh_values)
        return True

    def mapped(self) -> None:
        """The worker has the file mapped (it answered): the name can go."""
        if self._path is not None:
            try:
                os.unlink(self._path)
            except FileNotFoundError:
                pass
            self._path = None

    def changed(self, frame: memoryview) -> memoryview | None:
        """The input's bytes now, if the call changed them from ``frame`` (what was sent)."""
        assert self._mapping is not None
        now = memoryview(self._mapping)
        if torch.equal(torch.frombuffer(now, dtype=torch.uint8), torch.frombuffer(frame, dtype=torch.uint8)):
            now.release()
            return None
        return now

    def drop(self) -> None:
        self.mapped()
        # Views of the mapping may still be alive (a write-back in progress): let them close it.
        self._mapping = None
        self.key = None
