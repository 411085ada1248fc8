"""Slow is not wrong: how long calls take, measured against ``reference.lse`` on the same input.

Triton's interpreter costs about a millisecond per program instance, so on a CPU a correct kernel
with one program per row is a hundred times slower than one that tiles rows, and a GPU compiles a
new kernel for each new specialisation before it runs it. A call's time alone therefore says
little; what it is compared with is ``reference.lse`` on the same input, on the same machine, in
the same mode. Only a call slower than :data:`SLOW_FLOOR` seconds is compared (the reference is
timed then, so fast calls cost nothing):

* slower than :data:`SLOW_FACTOR` x the reference: a :class:`SlowCall` finding (time, shape,
  layout, the reference's time), reported beside the verdict, never a failure of its own;
* slower than a ``time_limit`` the user asked for: a failure of the ``time_limit`` check;
* an isolated call with no answer after its deadline (``--call-timeout``) is given a second,
  generous deadline, :data:`HANG_FACTOR` x the reference's time (at least the first deadline
  again), and only past that is it a hang (:func:`hang_deadline`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

import reference

from .contract import dtype_name

__all__ = ["HANG_FACTOR", "SLOW_FACTOR", "SLOW_FLOOR", "SlowCall", "best_per_call", "hang_deadline",
           "reference_seconds"]

SLOW_FLOOR = 5.0
"""Seconds below which a call is never reported as slow (nor compared with the reference)."""

SLOW_FACTOR = 20.0
"""A call slower than this many times the reference on the same input is reported as slow."""

HANG_FACTOR = 100.0
"""An isolated call is a hang only once it has also run this many times the reference's time."""


def reference_seconds(x: torch.Tensor) -> float:
    """Seconds ``reference.lse`` takes on ``x`` here (its second call: a first one may compile)."""
    reference.lse(x)
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    started = time.perf_counter()
    reference.lse(x)
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    return time.perf_counter() - started


def best_per_call(timed: Callable[[int], float], *, min_seconds: float = 0.2, repeats: int = 5) -> float:
    """Seconds per call from ``timed(iters)`` (the seconds ``iters`` calls take back to back): the
    count grows until one round takes ``min_seconds``, then the best of ``repeats`` rounds.

    The one timing loop of the bandwidth measurements: a candidate timed across the worker
    boundary and the references timed in this process are measured alike."""
    iters = 1
    while True:
        seconds = timed(iters)
        if seconds >= min_seconds or iters >= 1 << 16:
            break
        iters *= max(2, min(16, int(min_seconds / max(seconds, 1e-6))))
    best = min([seconds] + [timed(iters) for _ in range(repeats - 1)])
    return best / iters


def hang_deadline(first: float, reference: float | None) -> float:
    """The second deadline of an isolated call whose first deadline ``first`` passed."""
    calibrated = 0.0 if reference is None else HANG_FACTOR * reference
    return first + max(first, calibrated)


@dataclass(frozen=True)
class SlowCall:
    """A call that took far longer than the reference on the same input."""

    call: str
    shape: tuple[int, int]
    dtype: str
    layout: str
    seconds: float
    reference_seconds: float

    @property
    def ratio(self) -> float:
        return self.seconds / self.reference_seconds if self.reference_seconds > 0 else float("inf")

    def describe(self) -> str:
        return (f"{self.call} on a {self.dtype} {self.shape} {self.layout} input took {self.seconds:.1f} s, "
                f"{self.ratio:.0f} x reference.lse's {self.reference_seconds:.3f} s")

    def to_dict(self) -> dict[str, object]:
        return {"call": self.call, "shape": list(self.shape), "dtype": self.dtype, "layout": self.layout,
                "seconds": round(self.seconds, 3), "reference_seconds": round(self.reference_seconds, 4),
                "ratio": round(self.ratio, 1)}

    @classmethod
    def of(cls, call: str, x: torch.Tensor, layout: str, seconds: float, reference: float) -> SlowCall:
        return cls(call, tuple(x.shape), dtype_name(x.dtype), layout, seconds, reference)  # type: ignore[arg-type]
