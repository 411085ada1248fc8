"""The bandwidth benchmark's requests to a worker: the candidate timed in its own process.

The benchmark (:mod:`fuzz.grading.bench`) times a candidate in its worker, on an input the worker
builds on its own device (:mod:`.bench_input`: no gigabytes over the channel). :class:`BenchRequests`
is the proxy's side (a base of :class:`fuzz.isolation.worker.proxy.IsolatedImpl`, on its channel);
the worker's side is ``bench_prepare`` and ``bench_run`` in :mod:`fuzz.isolation.worker.process`.
"""

from __future__ import annotations

import time

import torch

from ...outcomes import Outcome, call_outcome
from ...timing import best_per_call
from .. import wire
from .codec import decode_output
from .raised import raised_from

__all__ = ["BenchRequests"]


class BenchRequests:
    """The proxy's benchmark requests; it provides the channel (``_conn``, ``_ensure_ready``,
    ``_receive``, ``_lose``, ``_time_left``) and ``call_timeout``, the deadline of one call."""

    def bench(self, *, shape: tuple[int, int], dtype: torch.dtype, seed: int, min_seconds: float = 0.2,
              repeats: int = 5) -> tuple[float, object]:
        """Seconds per call on a seeded ``randn`` input generated in the worker, and the output.

        Timed here, around whole requests of n calls between two device synchronisations (so
        work on side streams counts, and the candidate's process cannot fake the clock), minus
        the round trip of an empty request; the best of ``repeats``.
        """
        self._ensure_ready()
        wire.send_message(self._conn, {"op": "bench_prepare", "shape": list(shape), "dtype": wire.dtype_name(dtype),
                                       "seed": seed, "warmup": 3})
        self._bench_reply(self.call_timeout * 4, "the benchmark warm-up")
        overhead = min(self._bench_round(0)[0] for _ in range(3))
        last: list[object] = [None]

        def timed(iters: int) -> float:
            seconds, last[0] = self._bench_round(iters)
            return max(seconds - overhead, 1e-9 * iters)

        return best_per_call(timed, min_seconds=min_seconds, repeats=repeats), last[0]

    def _bench_round(self, iters: int) -> tuple[float, object]:
        started = time.perf_counter()
        wire.send_message(self._conn, {"op": "bench_run", "iters": iters})
        header, frames = self._bench_reply(self.call_timeout * max(1, iters), "the benchmark")
        seconds = time.perf_counter() - started
        output = header.get("output") or {}
        out = decode_output(output, frames, None) if output.get("kind") == "tensor" else None
        return seconds, out

    def _bench_reply(self, timeout: float, what: str):
        header, frames = self._receive(min(timeout, self._time_left()), what=what)
        if header.get("op") == "raised":
            outcome = call_outcome(error_kind=header.get("kind", "exception"))
            message = f"{header.get('type')}: {header.get('message')} (while {what})"
            if outcome.fatal:
                raise self._lose(outcome, message)
            raise raised_from(header)
        if header.get("op") == "exit":
            raise self._lose(Outcome.EXITED, f"{header.get('detail')} during {what}")
        return header, frames
