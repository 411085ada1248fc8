"""The input's memory, shared with the worker: whether a call changed it is decided here.

A CPU worker's input tensor is a view of a memory file (``memfd_create``) this process made and
keeps mapped; its descriptor reaches the worker over the call's channel (SCM_RIGHTS). After each
call the parent compares the mapping with the bytes it sent, so a candidate that patches whatever
the worker compares with (``torch.equal``, a copy it keeps) and then writes into its input is
seen all the same: nothing in the candidate's process is asked.

The file has no name: nothing is left behind when either process is killed, and no tmpfs size
limit applies. Each new input tensor gets a new file; the worker's old mapping stays valid (a
candidate that keeps an old input reads it, never a SIGBUS). CUDA inputs and huge-offset views
still travel as bytes and the worker compares them (see the threat model in the README).

The file is longer than the storage (:func:`slack`): a kernel that reads past its input's end (a
hard-coded row stride, an unmasked tail) must read garbage and fail a check, as it does when its
input is an ordinary allocation in process, not die of a segmentation fault at the mapping's last
page, which would hide which bug it is.
"""

from __future__ import annotations

import mmap
import os
import socket

import torch

__all__ = ["SharedInput", "receive_descriptor", "slack"]


def slack(size: int) -> int:
    """Bytes mapped after a storage of ``size`` bytes: as much again, and at least 1 MiB."""
    return max(size, 1 << 20)


class SharedInput:
    """The mapping of the input in flight (one at a time, as the worker holds one)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self._mapping: mmap.mmap | None = None
        self._pending: int | None = None  # a new file's descriptor, for the worker
        self._size = 0  # the storage's bytes at the start of the mapping (the rest is slack)

    def place(self, spec: dict, frame: memoryview) -> bool:
        """Put the input's storage bytes where the worker maps them (``spec["shared"]`` is set
        when a new file goes with this call: :meth:`send`). False when it travels as bytes."""
        size = memoryview(frame).nbytes
        if spec.get("mode") != "storage" or not size or not hasattr(os, "memfd_create"):
            self.drop()
            return False
        key = repr(spec["key"])
        if key != self.key or self._mapping is None or self._size != size:
            self.drop()
            try:
                fd = os.memfd_create("input", os.MFD_CLOEXEC)
            except OSError:
                return False
            try:
                # Reserved now, not on first touch: no memory left is an OSError here, where the
                # input can still travel as bytes, not a SIGBUS later.
                os.posix_fallocate(fd, 0, size + slack(size))
                self._mapping = mmap.mmap(fd, size + slack(size))
            except OSError:
                os.close(fd)
                self.drop()
                return False
            self._pending, self.key, self._size = fd, key, size
            spec["shared"] = True
        spec["nbytes"] = size
        self._mapping[:size] = frame  # the same tensor again: its current contents (fresh_values)
        return True

    def send(self, channel) -> None:
        """Pass the new file's descriptor to the worker, right after the call message."""
        if self._pending is None:
            return
        fd, self._pending = self._pending, None
        try:
            with socket.socket(fileno=os.dup(channel.fileno())) as sock:
                socket.send_fds(sock, [b"F"], [fd])
        except OSError:
            pass  # the worker is gone; the reply says how
        finally:
            os.close(fd)

    def changed(self, frame: memoryview) -> memoryview | None:
        """The input's bytes now, if the call changed them from ``frame`` (what was sent)."""
        assert self._mapping is not None
        now = memoryview(self._mapping)[:self._size]
        if torch.equal(torch.frombuffer(now, dtype=torch.uint8), torch.frombuffer(frame, dtype=torch.uint8)):
            now.release()
            return None
        return now

    def drop(self) -> None:
        if self._pending is not None:
            os.close(self._pending)
            self._pending = None
        # Views of the mapping may still be alive (a write-back in progress): they close it.
        self._mapping = None
        self.key = None
        self._size = 0


def receive_descriptor(channel) -> int:
    """The worker's side of :meth:`SharedInput.send`."""
    with socket.socket(fileno=os.dup(channel.fileno())) as sock:
        _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    if len(fds) != 1:
        raise ValueError(f"expected the input's descriptor, got {len(fds)}")
    return fds[0]
