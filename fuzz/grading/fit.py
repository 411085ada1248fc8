"""Fitting the shapes a CPU run draws to what the candidate costs in Triton's interpreter.

The CPU defaults (:func:`fuzz.strategies.default_max_elements`) are sized for kernels that cost in
the interpreter about what ``reference.lse`` costs. Correct kernels of other designs cost up to
about 15x the reference on the longest row the defaults draw (a row of 65536 columns, measured on
the corpus) and are checked in well under a minute. A kernel that pays per element far more (a
``tl.reduce`` with a Python combine function runs that function once per element: about 390x the
reference) would take more than 20 minutes, and look hung. So before a CPU run of a candidate that
defines a Triton kernel, its calls on one long row are timed in a worker of its own (each autotune
configuration; the slowest counts) against ``reference.lse`` on the longest row the defaults draw.
A candidate more than :data:`TRIGGER` times slower there is fitted: its element cap is the longest
row, halving from the default, on which it costs at most :data:`TARGET` times the reference, never
below :data:`FLOOR`. Such a kernel pays per element on every input, where an ordinary one pays per
program, so its whole run costs about 300 rows of the cap: on the 2-core machine the corpus's
``reduce_combine.py`` took 100-139 s for a default check with rows of 4096 (8.3-8.6 x the reference
there) and 42-61 s with rows of 2048 (about 4 x), where ordinary kernels take 10-26 s. At most 3 x
keeps it near those. The gap between the two factors keeps an ordinary kernel from being fitted on
a busy machine, where timings wander; the reference is timed before and after the probe, the
faster kept.
Rows are timed on a probe of :data:`PROBE_COLS` columns first and scaled linearly (such kernels
cost per element), so a far too slow row is never run.

The result says so (:class:`ShapeFit`), with the numbers. ``--max-elements`` (any explicit cap)
turns the fit off, and so does a probe that fails: the run then finds what is wrong. Both
timings are taken in the same interpreter on the same machine, so the fit depends on how the
candidate compares with the reference, hardly on the machine.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import torch

import reference

from ..isolation import IsolatedImpl
from ..outcomes import ImplLost, Outcome
from ..strategies import default_max_elements
from .options import GradeOptions
from .record import GradeRecord

__all__ = ["FLOOR", "PROBE_COLS", "TARGET", "TRIGGER", "ShapeFit", "fit_shapes", "fitted"]

PROBE_COLS = 8192
TRIGGER = 32.0  # fitted only when the longest row costs more than this many times the reference's
TARGET = 3.0  # ... and then to rows that cost at most this many times the reference's
FLOOR = 1024  # never fewer elements: a row of several tiles of common widths still fits
MAX_CONFIGS = 8  # autotune configurations probed (the slowest counts)


@dataclass(frozen=True)
class ShapeFit:
    """A CPU run's element cap, fitted to the candidate's interpreter cost."""

    max_elements: int
    default: int
    seconds: float  # the candidate's slowest call on one row of max_elements columns
    reference_seconds: float  # reference.lse on one row of default columns

    @property
    def ratio(self) -> float:
        return self.seconds / max(self.reference_seconds, 1e-9)

    def describe(self) -> str:
        return (f"fitted to the interpreter: at most {self.max_elements} elements, not {self.default}; a row of about "
                f"{self.max_elements} costs the implementation {self.seconds:.2f} s, a row of {self.default} costs "
                f"reference.lse {self.reference_seconds:.2f} s (--max-elements N chooses the cap)")

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "description": self.describe()}


def _row(cols: int) -> torch.Tensor:
    return torch.randn(1, cols, generator=torch.Generator().manual_seed(0))


def _best(call, x: torch.Tensor, repeats: int) -> float:
    call(_row(16))  # a configuration's first call sets the interpreter up: on a row that costs nothing
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        call(x)
        best = min(best, time.perf_counter() - started)
    return best


def _slowest_config(impl: IsolatedImpl, x: torch.Tensor, repeats: int) -> float:
    configs = impl.tuning()[0]
    slowest = 0.0
    for choice in range(min(configs, MAX_CONFIGS)) if configs > 1 else [None]:
        with impl.pinned(choice):
            slowest = max(slowest, _best(impl, x, repeats))
    return slowest


def _hung_while_loading(exc: BaseException, impl: IsolatedImpl | None) -> bool:
    return isinstance(exc, ImplLost) and exc.outcome is Outcome.TIMEOUT and impl is not None and impl.calls == 0


def fit_shapes(target: str, options: GradeOptions, *, memory_limit: int | None = None) -> ShapeFit | None:
    """The fitted cap for ``target`` under ``options`` (see the module docstring); None when the
    run keeps the defaults: not on the CPU, a cap given, cheap enough, or a probe that failed.
    :class:`fuzz.outcomes.ImplLost` (a timeout) when the target did not load in the probe's worker
    within the load deadline: the run's verdict, found once, not a second time by the run."""
    if not options.device.startswith("cpu") or options.max_elements is not None or not options.fit_shapes:
        return None
    default = default_max_elements("cpu")
    impl = None
    try:
        # Inside: where the reference cannot run (a process compiling Triton for CUDA refuses a
        # CPU row), there is nothing to fit against, and the run goes on with the defaults.
        reference_seconds = _best(reference.lse, _row(default), repeats=3)
        # One deadline per call (no calibrated second one): a probe that hangs costs its slot a minute,
        # and the run then finds the hang itself.
        impl = IsolatedImpl(target, device="cpu", call_timeout=max(options.call_timeout, 60.0), timeout=300.0,
                            memory_limit=memory_limit, threads=1, calibrate=None)
        impl.start()
        probe = _slowest_config(impl, _row(PROBE_COLS), repeats=1)
        per_column = probe / PROBE_COLS
        if per_column * default <= TRIGGER * reference_seconds / 2:
            return None  # far inside the bound: not worth timing the long row
        # Timed again, and the faster kept: the first timing runs while the fork server and the parts'
        # drivers still import (0.11-0.12 s in `check`, 0.07-0.08 s here), and a reference timed slow
        # once kept a per-element kernel's rows twice too long (a default check of 139 s, not 56 s).
        reference_seconds = min(reference_seconds, _best(reference.lse, _row(default), repeats=5))
        # Near it, the long row is timed itself (a launch's fixed cost, scaled from the probe, may be
        # what puts it there). The corpus's ordinary kernels come out at 2-10 x, its per-element one
        # at 130-150 x: timed, that row alone took it 18 s.
        if per_column * default <= 2 * TRIGGER * reference_seconds:
            full = _slowest_config(impl, _row(default), repeats=2)
            if full <= TRIGGER * reference_seconds:
                return None
            per_column = max(per_column, full / default)
        cols = default
        while cols > FLOOR and per_column * cols > TARGET * reference_seconds:
            cols //= 2
        seconds = _slowest_config(impl, _row(cols), repeats=2)
    except BaseException as exc:  # whatever the candidate does wrong, the run itself will report
        if isinstance(exc, KeyboardInterrupt) or _hung_while_loading(exc, impl):
            raise  # its import hangs: loading it again for the run would hang as long
        return None
    finally:
        if impl is not None:
            impl.close()
    return None if cols == default else ShapeFit(cols, default, seconds, reference_seconds)


def fitted(record: GradeRecord, target: str, options: GradeOptions, *,
           memory_limit: int | None = None) -> tuple[int | None, ImplLost | None]:
    """(The element cap of ``record``'s run, None) or (None, what became of the probe's worker when
    it hung while loading the target: the run's verdict, not to be found a second time by the run).
    The cap is ``options``' own, or fitted (:func:`fit_shapes`, noted in ``record``) for a candidate
    with a Triton kernel."""
    if any(flag["flag"] == "no_triton_kernel" for flag in record.flags):  # only kernels pay the interpreter
        return options.max_elements, None
    try:
        fit = fit_shapes(target, options, memory_limit=memory_limit)
    except ImplLost as lost:
        return None, lost
    if fit is None:
        return options.max_elements, None
    record.shape_fit = fit.to_dict()
    return fit.max_elements, None
