"""Shrinking within a time budget, preferring inputs that need no new compile.

A failure is usually found in seconds; shrinking it to a minimal counterexample is what used to
hold a verdict. Hypothesis gives up shrinking only after five minutes, and on a GPU each shrink
step that changes the input's *launch class* (its dtype, N's power of two, the classes Triton
specializes integers and pointers on) compiles a new binary: a whole-row kernel (BLOCK the next
power of two of N) pays a compile for every power of two the shrinker visits.

So a run's shrinking is bounded in seconds (:func:`default_shrink_seconds`, ``--shrink-seconds``),
and on a GPU it goes in two phases:

1. **Within the compiled classes.** Candidates whose launch class no example of the run had are
   skipped (rejected before the call): values, rows and recipes shrink first, among the binaries
   already compiled.
2. **Anywhere**, with the time left: the shrinker starts again from the best example of phase 1
   (kept in the run's example database) and may now change N, the dtype or the layout.

When the budget runs out, the smallest failing input found so far is the counterexample, and the
report says that shrinking stopped there. The budget is wall-clock time (the time a user waits),
so how far a failure shrinks depends on the machine; the failure itself, and whether a run fails,
do not.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import torch
from hypothesis.control import current_build_context
from hypothesis.database import ExampleDatabase
from hypothesis.internal.conjecture import engine as _engine

from .strategies import LseInput

__all__ = ["DEFAULT_SHRINK_SECONDS", "ShrinkClock", "ShrinkStore", "default_shrink_seconds", "final_run",
           "launch_class", "same_example", "shrink_limit"]

DEFAULT_SHRINK_SECONDS = {"cpu": 10.0, "cuda": 10.0}
"""Seconds of shrinking a run allows by default, per device type (``--shrink-seconds``)."""

_ALIGNMENT = 16  # Triton specializes an integer divisible by 16, and a 16-byte aligned pointer


def default_shrink_seconds(device: torch.device | str) -> float:
    return DEFAULT_SHRINK_SECONDS["cpu" if torch.device(device).type == "cpu" else "cuda"]


def _integer_class(value: int) -> str:
    # Triton's classes of an integer argument: the constant 1, divisible by 16, 64-bit, or none.
    if value == 1:
        return "1"
    return ("i64" if value >= 2**31 else "") + ("D" if value % _ALIGNMENT == 0 else "")


def launch_class(example: LseInput) -> tuple:
    """What the binaries an implementation launches on ``example`` most likely depend on: the
    dtype, N's power of two (the BLOCK of a whole-row kernel), and Triton's classes of every size,
    stride and the data pointer's alignment. Two examples of one class reuse each other's compiles
    in the kernels this is written for (a launcher that derives BLOCK from N, or a fixed tile)."""
    rows, cols = example.shape
    if example.batch is None:
        (row_stride, col_stride), offset, _ = example.layout.strides(rows, cols)
        dims = ((rows, row_stride), (cols, col_stride))
    else:
        x = example.x
        dims, offset = tuple(zip(x.shape, x.stride())), x.storage_offset()
    block = 1 << max(cols - 1, 0).bit_length() if cols else 0
    aligned = offset * example.dtype.itemsize % _ALIGNMENT == 0
    return (str(example.dtype), block, aligned,
            tuple((_integer_class(size), _integer_class(stride)) for size, stride in dims))


@dataclass
class ShrinkClock:
    """A run's shrinking: when it began, its budget, and what it did."""

    budget: float | None  # seconds; None: Hypothesis' own limit
    began: float | None = None  # perf_counter() at the first failure
    steps: int = 0  # candidates tried (each one example: drawn, maybe run)
    deferred: int = 0  # candidates skipped in phase 1: their launch class was new to the run
    classes: set = field(default_factory=set)  # the launch classes of the examples run
    launched_before: int = 0  # specializations new to the implementation's process when shrinking began

    @property
    def shrinking(self) -> bool:
        return self.began is not None

    def start(self) -> None:
        if self.began is None:
            self.began = time.perf_counter()

    def spent(self) -> float:
        return 0.0 if self.began is None else time.perf_counter() - self.began

    def left(self) -> float | None:
        return None if self.budget is None else self.budget - self.spent()

    def out_of_time(self) -> bool:
        left = self.left()
        return left is not None and left <= 0


@contextlib.contextmanager
def shrink_limit(seconds: float | None) -> Iterator[None]:
    """Hypothesis' limit on one run's shrinking set to ``seconds`` (None: left as it is) while the
    block runs. Hypothesis reads the limit from its engine module when shrinking starts (it keeps
    it monkeypatchable for this), and checks it after every candidate."""
    if seconds is None:
        yield
        return
    before = _engine.MAX_SHRINKING_SECONDS
    _engine.MAX_SHRINKING_SECONDS = max(seconds, 0.0)
    try:
        yield
    finally:
        _engine.MAX_SHRINKING_SECONDS = before


class ShrinkStore(ExampleDatabase):
    """The example database a run's phases share, in memory: phase 1 saves its failing examples
    in it, and :meth:`demote` hands them to phase 2 to shrink again. Hypothesis does not shrink an
    example it reads back from a database's *primary* corpus (it was shrunk when saved), but does
    one from the *secondary* corpus (``KEY.secondary``, where it keeps examples that were not yet
    minimal): so the failures move there."""

    _SECONDARY = b".secondary"

    def __init__(self) -> None:
        super().__init__()
        self._data: dict[bytes, set[bytes]] = {}

    def save(self, key: bytes, value: bytes) -> None:
        self._data.setdefault(bytes(key), set()).add(bytes(value))

    def fetch(self, key: bytes) -> Iterable[bytes]:
        yield from sorted(self._data.get(bytes(key), ()))

    def delete(self, key: bytes, value: bytes) -> None:
        self._data.get(bytes(key), set()).discard(bytes(value))

    def demote(self) -> None:
        """Every failing example of a primary corpus moved to its secondary one."""
        for key in [key for key in self._data if b"." not in key]:
            self._data.setdefault(key + self._SECONDARY, set()).update(self._data.pop(key))


def same_example(a: LseInput, b: LseInput) -> bool:
    """Whether two examples are the same input: values (bit for bit), layout and batch. Hypothesis
    runs a failing example again (to confirm it); a shrink out of time must not skip that run."""
    return (a.values.shape == b.values.shape and a.values.dtype == b.values.dtype and a.layout == b.layout
            and a.batch == b.batch and a.values.device == b.values.device
            and torch.equal(a.values.view(_SAME_WIDTH[a.values.element_size()]),
                            b.values.view(_SAME_WIDTH[b.values.element_size()])))


_SAME_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def final_run() -> bool:
    """Whether Hypothesis is running the example it reports (its final run of the smallest failure)."""
    try:
        return bool(current_build_context().is_final)
    except Exception:  # no build context: not inside Hypothesis' test
        return False
