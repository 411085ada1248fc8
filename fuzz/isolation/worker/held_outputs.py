"""Outputs the caller still holds: what the candidate does to them later reaches the caller's copy.

In process, a result is the candidate's own tensor: a buffer it returns again and overwrites
changes the caller's earlier result too (the metamorphic checks then compare a second call with
a first that moved under them). Across the process boundary the caller holds a copy, so the
worker keeps the candidate's tensor while the copy lives, sends its bytes after every call, and
:meth:`HeldOutputs.update` writes a change into the copy. The decision is made here, from bytes,
not from the worker's word on which tensor is which.
"""

from __future__ import annotations

import weakref

import torch

from .. import wire

__all__ = ["HeldOutputs"]


class HeldOutputs:
    """The parent's copies of outputs, by the id the worker gave them."""

    def __init__(self) -> None:
        self._copies: dict[int, weakref.ref] = {}
        self._released: list[int] = []  # copies that died since the last call: the worker lets go
        self.changes = 0  # calls after which an output the caller held had changed

    def hold(self, out: object, output_id: int | None) -> object:
        if output_id is not None and isinstance(out, torch.Tensor):
            self._copies[int(output_id)] = weakref.ref(out)
            weakref.finalize(out, self._let_go, int(output_id))
        return out

    def _let_go(self, output_id: int) -> None:
        self._copies.pop(output_id, None)
        self._released.append(output_id)

    def released(self) -> list[int]:
        """The ids to tell the worker about with the next call (each once)."""
        taken, self._released[:] = list(self._released), []
        return taken

    def largest(self) -> int:
        """Bytes of the largest copy held: the worker sends each back with every reply."""
        return max((t.nbytes for t in (ref() for ref in list(self._copies.values())) if t is not None), default=0)

    def update(self, held: list[int], frames: list[bytearray]) -> None:
        """Write what the candidate did to its earlier outputs into the copies."""
        changed = False
        for output_id, data in zip(held, frames):
            ref = self._copies.get(int(output_id))
            ours = ref() if ref is not None else None
            if ours is None or ours.device.type == "meta" or memoryview(data).nbytes != ours.nbytes:
                continue
            now = wire.tensor_from_bytes(data, ours.dtype, ours.shape, ours.device)
            if not torch.equal(wire.bits(now), wire.bits(ours)):
                ours.copy_(now)
                changed = True
        self.changes += changed
