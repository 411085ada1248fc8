"""One run's examples in parts: separate Hypothesis runs, each on a seed derived from the run's.

On the CPU a check is bound by Triton's interpreter, which runs a kernel's programs one after the
other on one core: a correct one-program-per-row kernel took about 70 s for the default 200
examples on a two-core machine, with the second core idle. So on the CPU the examples are split
into :data:`CPU_PARTS` parts (each of at least :data:`MIN_PART_BUDGET` examples) with a worker
each: ``lse-fuzz check`` runs them side by side, one part per core; a grading driver runs them
one after the other (grading runs candidates side by side already). The examples depend on the
seed, the budget and the number of parts, never on how many run at once: a seed gives the same
examples on a machine of one core or of sixty-four. Part 0 uses the run's own seed. How many run
at once follows the free CPUs while the run goes (:mod:`.part_queue`): a run started on a busy
machine starts a part beside its first as soon as another run gives a CPU back.

On a GPU the kernels run in microseconds and a check is bound by Triton compiling each new launch
configuration on the host, one at a time per process: a cold ``check`` of ``reference.lse`` compiled
62 binaries in 91 s on an H200 while 15 of the host's 16 cores had nothing to do. So on a GPU the
examples are split into :data:`GPU_PARTS` parts: side by side, their compiles run on as many cores
(the parts share Triton's disk cache, so a binary one part compiled is a cache hit for the others).

A run of several parts fails when any part fails; the report shows the first failing part (in
part order) and adds the examples, calls and times of the parts up to it. Parts run one after
another stop there: the parts after it could not change the verdict. Parts run side by side stop
each other (:class:`PartSignal`): the first part to find a failure says so, and every part that
has found none ends at its next example, so a verdict waits for one failure's shrinking, not for
the passing parts' whole runs. Which part's failure is shown can then depend on which found its
failure first; the verdict cannot. A part not started by then never starts (:func:`not_started`).

A part that met a construct the CPU cannot run (``unsupported``) decides nothing alone: the parts
after it still run, and the run is ``unsupported`` only when no part failed (a failure wins; see
:func:`decides`). It does not stop the others either.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import replace
from pathlib import Path

from ..costs import Costs
from ..outcomes import Verdict
from ..timing import merge_compile_summaries
from .options import MemoryPhase
from .record import GradeRecord
from .options import GradeOptions

__all__ = ["CPU_PARTS", "GPU_PARTS", "MIN_PART_BUDGET", "NOT_STARTED", "PartSignal", "decided", "decides", "ended",
           "merge_parts", "not_started", "part_count", "split"]

CPU_PARTS = 2
GPU_PARTS = 4
MIN_PART_BUDGET = 50  # below this a part's second worker and its start cost more than they save


def part_count(options: GradeOptions) -> int:
    """How many parts ``options`` run in: ``options.parts`` when given, else the device's default
    (:data:`CPU_PARTS` on the CPU, :data:`GPU_PARTS` on a GPU) as far as the budget gives each part
    at least :data:`MIN_PART_BUDGET` examples, and at least one."""
    if options.parts is not None:
        return min(options.parts, options.budget)
    default = CPU_PARTS if options.device.startswith("cpu") else GPU_PARTS
    return max(1, min(default, options.budget // MIN_PART_BUDGET))


def _part_seed(seed: int, index: int) -> int:
    if index == 0:
        return seed
    digest = hashlib.sha256(f"lse-fuzz-part\0{seed}\0{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def split(options: GradeOptions, parts: int, *, max_elements: int | None) -> list[GradeOptions]:
    """The options of each part: its share of the budget (the first ones take the remainder), its
    derived seed, and the run's element cap decided once for all of them (``max_elements``). No
    part measures bandwidth or probes memory: the run does that once, after its parts."""
    share, extra = divmod(options.budget, parts)
    seed = options.effective_seed
    return [replace(options, budget=share + (index < extra), private_seed=None, derived_seed=_part_seed(seed, index),
                    parts=1, max_elements=max_elements, fit_shapes=False, bench=False,
                    memory=MemoryPhase.OFF)
            for index in range(parts)]


MEMORY_SIGNAL = "failed-memory-phase"
"""The file the memory phase beside the parts leaves in their directory once a tool found a stray access."""
MEMORY_FOUND = "the memory phase beside the run found a stray access (its verdict follows)"


class PartSignal:
    """The parts of one run side by side tell each other of a failure through files in one
    directory, one per part that failed, named by its process (each part runs in a process of its
    own): a :class:`fuzz.runner.RunStop`."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory, self.name = Path(directory), f"failed-{os.getpid()}"

    def failed(self) -> None:
        (self.directory / self.name).touch()

    @property
    def why(self) -> str:
        """What stopped the parts, in a stopped part's notes: the memory phase's finding (it runs
        beside them on a GPU, :func:`fuzz.grading.memory_phase.watching`), else "" (another part)."""
        return MEMORY_FOUND if (self.directory / MEMORY_SIGNAL).exists() else ""

    def others_failed(self) -> bool:
        try:
            return any(name != self.name for name in os.listdir(self.directory))
        except OSError:  # the run is over and its directory gone: nothing to stop for
            return False


def ended(part: GradeRecord, at: float) -> GradeRecord:
    """``part`` with when it ended, ``at`` seconds from the parts' start: with its own seconds, when
    each part ran, for the report (``parts[i].ended``)."""
    part.extra["ended"] = round(at, 3)
    return part


NOT_STARTED = "not started: another part of the run failed first"


def not_started(part: GradeRecord) -> GradeRecord:
    """``part`` (its base record) as a part never started: another failed first (or the memory
    phase found a stray access), so it could not change the verdict. It passes, with no examples."""
    part.verdict, part.examples, part.calls, part.seconds, part.reason = Verdict.PASS, 0, 0, 0.0, NOT_STARTED
    return part


def decides(verdict: Verdict | None) -> bool:
    """Whether a part with this verdict decides the run's: one that neither passed nor was
    unsupported (the CPU could not run one of its examples: another part's failure still wins)."""
    return verdict not in (Verdict.PASS, Verdict.UNSUPPORTED)


def decided(parts: list[GradeRecord]) -> list[GradeRecord]:
    """The parts up to the first that decides the verdict (:func:`decides`; all of them when none
    does), whichever way they were run."""
    for index, part in enumerate(parts):
        if decides(part.verdict):
            return parts[:index + 1]
    return parts


_FROM_CHOSEN = ("verdict", "check", "reason", "details", "exception", "counterexample", "reproducer", "replay",
                "result")


def merge_parts(record: GradeRecord, parts: list[GradeRecord]) -> GradeRecord:
    """``record`` (the run's base record, its static flags and shape fit filled in) completed from
    the records of its parts: the verdict and failure of the first part that decides it (else of the
    first unsupported part, else of the first part), the examples, calls and times of all given (see
    :func:`decided`)."""
    chosen = next((part for part in parts if decides(part.verdict)), None) or \
        next((part for part in parts if part.verdict is Verdict.UNSUPPORTED), parts[0])
    for name in _FROM_CHOSEN:
        setattr(record, name, getattr(chosen, name))
    drawn = [part.result["largest"] for part in parts if isinstance((part.result or {}).get("largest"), dict)]
    if record.result is not None and drawn:  # the largest of all parts, for the memory phase
        record.result = {**record.result, "largest": max(drawn, key=lambda one: math.prod(one["shape"]))}
    counted = [part.examples for part in parts if part.examples is not None]
    record.examples = sum(counted) if counted else None
    record.calls = sum(part.calls or 0 for part in parts)
    record.candidate_seconds = round(sum(part.candidate_seconds or 0.0 for part in parts), 3)
    seen = {(flag["flag"], flag["message"]) for flag in record.flags}
    for part in parts:
        for flag in part.flags:
            if (flag["flag"], flag["message"]) not in seen:
                seen.add((flag["flag"], flag["message"]))
                record.flags.append(flag)
    record.slow = [call for part in parts for call in part.slow]
    costs = [Costs.from_dict(part.costs) for part in parts if part.costs is not None]
    record.costs = sum(costs[1:], costs[0]).to_dict() if costs else None  # the parts' workers and time summed
    record.compiles = merge_compile_summaries([part.compiles for part in parts])
    record.noise = next((part.noise for part in parts if part.noise), None)
    # Each part's compiles too: on a GPU the parts share Triton's cache, and which part pays for a
    # binary every part draws decides which part a verdict waits for.
    record.parts = [{"part": index, "verdict": part.verdict.value, "check": part.check, "examples": part.examples,
                     "calls": part.calls or 0, "seconds": part.seconds or 0.0,
                     "check_seconds": (part.result or {}).get("seconds"),
                     **({"compiles": part.costs.get("compiles"),
                         "compiling_seconds": (part.costs.get("seconds") or {}).get("compiling"),
                         "costs": part.costs} if part.costs else {}),
                     **({"ended": part.extra["ended"]} if "ended" in part.extra else {})}
                    for index, part in enumerate(parts)]
    if chosen.verdict is Verdict.PASS:
        record.reason = f"{record.examples} examples passed every check (in {len(parts)} parts)"
    elif len(parts) > 1:
        record.reason = f"{chosen.reason} (part {parts.index(chosen) + 1} of {len(parts)})"
    return record
