"""fuzz.isolation.worker.codec: an input too large to travel whole travels as its view's elements,
each once, and comes back (the worker's writes into it) the same way."""

from __future__ import annotations

import torch

from fuzz.calls import CallConvention
from fuzz.isolation.worker import codec, process


def _carrier(rows: int = 1000) -> torch.Tensor:
    # What a worker under a call convention is sent: the input under a leading dim of `rows` copies
    # of stride 0 (fuzz.calls.CallConvention.carrier), in a storage with room around the view.
    storage = torch.arange(60, dtype=torch.float64)
    x = storage.as_strided((3, 4, 2), (20, 5, 2), 1)
    return CallConvention.carrier(x, rows)


def test_a_large_carrier_travels_as_one_copy_of_its_elements_and_is_rebuilt_exactly(monkeypatch):
    # An H100 worker was sent 25 GB for one 4-D float64 input of 3.6 million elements: its
    # row count of 875, as a dim of stride 0, expanded into 875 copies of the view.
    monkeypatch.setattr(codec, "WHOLE_STORAGE_LIMIT", 64)  # as for a storage past 256 MB
    carrier = _carrier()
    spec, frame = codec.encode_input(carrier)
    assert spec["mode"] == "view"
    assert len(frame) == 3 * 4 * 2 * 8  # the 24 elements once, not 1000 times
    state = process._WorkerState(None, "cpu")
    x = state.input_for(spec, bytearray(frame))
    assert x.shape == carrier.shape and x.stride() == carrier.stride()
    assert x.storage_offset() == carrier.storage_offset()
    assert torch.equal(x[0], carrier[0]) and torch.equal(x[-1], carrier[0])
    assert state.changed_input() is None
    x[0, 1, 2, 1] = -7.0  # the candidate writes into its input: seen, and written back once
    changed = state.changed_input()
    assert changed is not None and len(changed) == len(frame)
    back = _carrier()
    codec.write_back(back, spec, bytearray(changed))
    assert back[0, 1, 2, 1] == -7.0 and back[999, 1, 2, 1] == -7.0
    assert torch.equal(back[0], x[0])
