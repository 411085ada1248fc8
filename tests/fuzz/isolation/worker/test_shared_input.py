"""The input's shared mapping: the parent reads the worker's writes itself, the worker gets the
file's descriptor over the channel (no name to leave behind), and an input that cannot be placed
travels as bytes instead of failing the call."""

from __future__ import annotations

import mmap
import os
import socket

import pytest
import torch

from fuzz.isolation.worker.codec import encode_input
from fuzz.isolation.worker.shared_input import SharedInput, receive_descriptor, slack


def test_a_write_into_the_mapping_is_seen_by_the_parent():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    spec, frame = encode_input(x)
    shared = SharedInput()
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert shared.place(spec, frame) and spec["shared"]
        shared.send(ours)
        fd = receive_descriptor(theirs)  # what the worker does
    assert os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:input")  # no name in any directory
    theirs_view = torch.frombuffer(mmap.mmap(fd, 0), dtype=torch.float32)
    os.close(fd)
    assert shared.changed(frame) is None
    theirs_view[3] = -4.0
    now = shared.changed(frame)
    assert now is not None and torch.frombuffer(now, dtype=torch.float32)[3] == -4.0
    again, frame = encode_input(x)
    assert shared.place(again, frame) and "shared" not in again  # the same tensor: the same file
    assert theirs_view[3] == 4.0  # its current contents were written for the call
    shared.drop()


def test_an_input_that_cannot_be_placed_travels_as_bytes(monkeypatch):
    def no_memory(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_memory)
    spec, frame = encode_input(torch.ones(2, 3))
    assert not SharedInput().place(spec, frame) and "shared" not in spec


@pytest.mark.parametrize("x", [torch.ones(0, 3), torch.ones(3, 0)], ids=["no_rows", "no_columns"])
def test_an_empty_input_is_not_shared(x):
    spec, frame = encode_input(x)
    assert not SharedInput().place(spec, frame)


def test_the_mapping_goes_on_past_the_storage_so_reading_past_the_end_is_not_a_crash():
    # A kernel that reads past its input (a hard-coded row stride) must read garbage and fail a
    # check, as with an ordinary allocation, not die of SIGSEGV at the mapping's last page.
    x = torch.ones(7, 257, dtype=torch.float64)
    spec, frame = encode_input(x)
    size = memoryview(frame).nbytes
    shared = SharedInput()
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert shared.place(spec, frame)
        shared.send(ours)
        fd = receive_descriptor(theirs)
    mapping = mmap.mmap(fd, 0)
    os.close(fd)
    assert spec["nbytes"] == size and len(mapping) >= size + slack(size) >= 2 * size
    past = torch.frombuffer(mapping, dtype=torch.uint8)
    past[size + 10] = 7  # the slack is not the input: writing there changes nothing judged
    assert shared.changed(frame) is None
    past[size - 1] ^= 1
    assert shared.changed(frame) is not None
    shared.drop()
