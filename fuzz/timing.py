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
  again), and only past that is it a hang (:func:`hang_deadline`); on the CPU, a worker that only
  waits after the first deadline (no CPU used, no thread runnable) is a hang at once
  (:mod:`fuzz.isolation.worker.idle`): the grace is for a slow computation;
* compiling is not hanging: the seconds an isolated call spends compiling (Triton's JIT, an
  autotuning benchmark, torch.compile) stop its clock, bounded only by ``--compile-timeout``; a
  compile over :data:`SLOW_FLOOR` seconds is a finding (:class:`Compile`), never a failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

import reference
from reference._device import interpreting

from .contract import dtype_name

__all__ = ["HANG_FACTOR", "SLOW_FACTOR", "SLOW_FLOOR", "Compile", "SlowCall", "best_per_call", "compile_label",
           "compile_summary", "describe_compile_summary", "describe_compiles", "hang_deadline",
           "merge_compile_summaries", "reference_seconds"]

SLOW_FLOOR = 5.0
"""Seconds below which a call is never reported as slow (nor compared with the reference)."""

SLOW_FACTOR = 20.0
"""A call slower than this many times the reference on the same input is reported as slow."""

HANG_FACTOR = 100.0
"""An isolated call is a hang only once it has also run this many times the reference's time."""


def reference_seconds(x: torch.Tensor) -> float | None:
    """Seconds ``reference.lse`` takes on ``x`` here (its second call: a first one may compile).

    None when it cannot run on ``x`` in this process: a CPU input where Triton was loaded to compile
    for CUDA (the Python API asked for ``device="cpu"`` on a GPU machine; the workers run Triton's
    interpreter, this process cannot switch). A call is then timed against its deadlines alone."""
    if x.device.type == "cpu" and not interpreting():
        return None
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
    reference_seconds: float | None  # None: reference.lse cannot run on this input here

    @property
    def ratio(self) -> float:
        known = self.reference_seconds is not None and self.reference_seconds > 0
        return self.seconds / self.reference_seconds if known else float("inf")

    def describe(self) -> str:
        took = f"{self.call} on a {self.dtype} {self.shape} {self.layout} input took {self.seconds:.1f} s"
        if self.reference_seconds is None:
            return took + " (reference.lse cannot run on this device in this process: not compared)"
        return f"{took}, {self.ratio:.0f} x reference.lse's {self.reference_seconds:.3f} s"

    def to_dict(self) -> dict[str, object]:
        known = self.reference_seconds is not None
        return {"call": self.call, "shape": list(self.shape), "dtype": self.dtype, "layout": self.layout,
                "seconds": round(self.seconds, 3),
                "reference_seconds": round(self.reference_seconds, 4) if known else None,
                "ratio": round(self.ratio, 1) if known else None}

    @classmethod
    def of(cls, call: str, x: torch.Tensor, layout: str, seconds: float, reference: float | None) -> SlowCall:
        return cls(call, tuple(x.shape), dtype_name(x.dtype), layout, seconds, reference)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Compile:
    """One compile the worker ran for the candidate (:mod:`fuzz.isolation.worker.compile_watch`): Triton's
    JIT, an autotuning benchmark or torch.compile; ``block`` is the kernel's widest power-of-two
    constexpr (0 when unknown). Its seconds never count toward a call's deadline."""

    kind: str
    kernel: str
    block: int
    seconds: float
    call: int

    def describe(self) -> str:
        return f"{compile_label(self.kind, self.kernel, self.block)}: {self.seconds:.1f} s, during call {self.call}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "kernel": self.kernel, "block": self.block, "seconds": round(self.seconds, 3),
                "call": self.call}


def compile_label(kind: object, kernel: object, block: object) -> str:
    """``triton _lse_kernel (BLOCK 524288)``; ``torch.compile`` when the kernel has no name of its own."""
    name = str(kind) if str(kernel) in (str(kind), "?", "None") else f"{kind} {kernel}"
    return name + (f" (BLOCK {block})" if block else "")


def describe_compiles(compiles: list[Compile]) -> str | None:
    """One line on the compiles when one took over :data:`SLOW_FLOOR` seconds (a finding), else None."""
    slow = [c for c in compiles if c.seconds > SLOW_FLOOR]
    if not slow:
        return None
    slowest = max(slow, key=lambda c: c.seconds)
    widest = max(compiles, key=lambda c: c.block)
    total = sum(c.seconds for c in compiles)
    return (f"slow compiles (a finding, not a failure: compile time never counts toward a call's deadline): "
            f"{len(compiles)} compile(s) in {total:.1f} s, {len(slow)} over {SLOW_FLOOR:g} s; the slowest: "
            f"{slowest.describe()}; the widest block: {widest.block or 'unknown'}")


def compile_summary(compiles: list[Compile]) -> dict[str, object] | None:
    """What a grading record keeps of the compiles: how many, their seconds, the widest block and
    every compile over :data:`SLOW_FLOOR` seconds (the findings); None when nothing compiled."""
    if not compiles:
        return None
    return {"count": len(compiles), "seconds": round(sum(c.seconds for c in compiles), 3),
            "widest_block": max(c.block for c in compiles),
            "slow": [c.to_dict() for c in compiles if c.seconds > SLOW_FLOOR]}


def merge_compile_summaries(summaries: list[dict | None]) -> dict[str, object] | None:
    """One summary of several runs' (a check's parts)."""
    present = [s for s in summaries if isinstance(s, dict)]
    if not present:
        return None
    return {"count": sum(int(s.get("count") or 0) for s in present),
            "seconds": round(sum(float(s.get("seconds") or 0.0) for s in present), 3),
            "widest_block": max(int(s.get("widest_block") or 0) for s in present),
            "slow": [c for s in present for c in s.get("slow") or [] if isinstance(c, dict)]}


def describe_compile_summary(summary: object) -> str | None:
    """The report's line on slow compiles (a finding), None when none was slow."""
    if not isinstance(summary, dict) or not summary.get("slow"):
        return None
    try:
        slow = [Compile(str(c["kind"]), str(c["kernel"]), int(c["block"]), float(c["seconds"]), int(c["call"]))
                for c in summary["slow"]]
    except (KeyError, TypeError, ValueError):
        return None
    slowest = max(slow, key=lambda c: c.seconds)
    return (f"{summary.get('count')} compile(s) in {summary.get('seconds')} s, {len(slow)} over {SLOW_FLOOR:g} s "
            f"(a finding, not a failure: compiling never counts toward a call's deadline); the slowest: "
            f"{slowest.describe()}; the widest block: {summary.get('widest_block') or 'unknown'}")
