"""The memory phase of a grading on a GPU (:mod:`fuzz.memory`): when it runs, and how a finding
becomes the record's verdict."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

from .. import memory
from ..checks import CHECKS
from ..contract import Layouts, dtype_name
from ..outcomes import Verdict
from .candidates import Candidate
from .options import GradeOptions, MemoryPhase
from .parts import MEMORY_FOUND, MEMORY_SIGNAL, PartSignal
from .record import GradeRecord

__all__ = ["MemoryStop", "memory_phase", "other_sizes", "probing", "run_inputs", "stop_for", "watching"]

# A crash the GPU reported as an error of a kernel (an illegal address, an address in the wrong
# space, a launch failure): often a stray access, which the phase then names; if it finds none, the
# crash stands.
_KERNEL_FAULT = ("illegal memory access", "cudaErrorIllegalAddress", "cudaErrorInvalidAddressSpace",
                 "misaligned address", "cudaErrorMisalignedAddress", "unspecified launch failure",
                 "cudaErrorLaunchFailure")


def _probes_memory(options: GradeOptions, record: GradeRecord, verdict: Verdict) -> bool:
    """Whether the run's verdict can still be a memory check's. The CPU stops an access before the
    values are judged, so a kernel whose bad read also spoils its values fails the memory check there;
    on a GPU the phase comes after the fuzzing, so it runs after a pass, after a value check's failure
    and after a crash the GPU reported as a kernel's fault, and names the access the same way."""
    if not options.device.startswith("cuda") or options.memory is MemoryPhase.OFF:
        return False
    if verdict is Verdict.FAIL:
        return options.memory is MemoryPhase.BESIDE and record.check not in (*memory.MEMORY_CHECKS, "time_limit")
    return _passed_or_faulted(record, verdict)


def _passed_or_faulted(record: GradeRecord, verdict: Verdict) -> bool:
    """Whether the fuzzing passed, or the worker crashed with what the GPU reports for a kernel's fault."""
    if verdict is Verdict.PASS:
        return True
    return verdict is Verdict.CRASH and any(s in f"{record.reason}\n{record.details}" for s in _KERNEL_FAULT)


def _left_out(options: GradeOptions) -> tuple[str, ...]:
    """The memory checks the run selected whose tools did not start beside it (``options.memory_checks``)."""
    if options.memory_checks is None:
        return ()
    return tuple(c for c in memory.MEMORY_CHECKS if c in (options.checks or CHECKS) and c not in options.memory_checks)


def _started(target: str, options: GradeOptions, only: tuple[str, ...] | None = None) -> memory.Probing:
    """The phase's processes started for the checks the run selected (of them, ``only``'s)."""
    contract = options.declared()
    checks = tuple(c for c in options.checks or tuple(CHECKS) if only is None or c in only)
    return memory.start(options.worker_target(target), checks=checks, dtype=dtype_name(contract.dtypes[0]),
                        also=other_sizes(contract.dtypes), device=options.device, max_n=contract.max_n,
                        contiguous=contract.layouts is Layouts.CONTIGUOUS, huge=options.huge_offsets)


def other_sizes(dtypes) -> tuple[str, ...]:
    """The first of ``dtypes`` of each element size but the first's (float16 and float64 of the
    default float32, float16, bfloat16, float64): the sizes a kernel's tiles may differ in
    (:data:`fuzz.memory.probe.ELEMENT_SIZE_PROBES`)."""
    first = {}
    for dtype in dtypes:
        first.setdefault(dtype.itemsize, dtype)
    return tuple(dtype_name(dtype) for dtype in list(first.values())[1:])


def run_inputs(record: GradeRecord, verdict: Verdict) -> list[dict]:
    """The run's own inputs for the phase to replay (:func:`fuzz.memory.probe.replay_inputs`): the
    example the fuzzing failed or crashed on (its saved file), and the largest input it drew."""
    inputs = []
    if verdict is not Verdict.PASS and record.reproducer and os.path.isfile(record.reproducer):
        shown = (record.counterexample or {}).get("description", "")
        inputs.append({"description": f"the counterexample{', ' + shown if shown else ''}",
                       "reproducer": record.reproducer})
    largest = (record.result or {}).get("largest")
    if isinstance(largest, dict):
        inputs.append({"description": f"the largest input drawn, {largest.get('description', '')}",
                       **{key: largest.get(key) for key in ("shape", "dtype", "layout")}})
    return inputs


@contextlib.contextmanager
def probing(target: str, options: GradeOptions):
    """The phase's probes started now, on a GPU, to run beside the fuzzing (they need nothing from
    it): a verdict then waits only for what is left of them. Stopped on the way out if the run did
    not need them (a load error, a timeout). Yields None where no phase can follow (the CPU, a part
    of a run, a run whose options start the phase only once it is needed: ``options.memory``)."""
    if not options.device.startswith("cuda") or options.memory is not MemoryPhase.BESIDE:
        yield None
        return
    probes = _started(target, options, options.memory_checks)
    try:
        yield probes
    finally:
        probes.cancel()


class MemoryStop:
    """The fuzzing's stop (a :class:`fuzz.run.RunStop`) while the phase runs beside it: it ends at its
    next example once a tool has reported a stray access (:meth:`fuzz.memory.Probing.found`, read at
    most every ``every`` seconds), as the verdict is then the memory check's whatever the rest of the
    examples show; ``parts``: the parts' own stop, kept. A kernel that writes past its output with
    the right values ran its whole budget before its verdict (53.7 s of a cold mutation analysis's 84 s
    on an H100, 2026-12-05), where memcheck had found the write in 15.8 s."""

    def __init__(self, probes: memory.Probing, parts=None, every: float = 0.5) -> None:
        self.probes, self.parts, self.every = probes, parts, every
        self._polled, self._found = float("-inf"), False

    @property
    def why(self) -> str:
        return MEMORY_FOUND if self._found else getattr(self.parts, "why", "")

    def failed(self) -> None:
        if self.parts is not None:
            self.parts.failed()

    def others_failed(self) -> bool:
        if self.parts is not None and self.parts.others_failed():
            return True
        if not self._found and time.monotonic() - self._polled >= self.every:
            self._polled, self._found = time.monotonic(), self.probes.found()
        return self._found


def stop_for(options: GradeOptions, probes: memory.Probing | None):
    """The fuzzing's stop: the parts' own (:class:`.parts.PartSignal`, where the run has parts side by
    side), and the phase's where it runs beside (:class:`MemoryStop`)."""
    parts = PartSignal(options.stop_dir) if options.stop_dir else None
    return parts if probes is None else MemoryStop(probes, parts)


@contextlib.contextmanager
def watching(probes: memory.Probing | None, directory: str, every: float = 0.5):
    """While the parts of a run go side by side, each in a process of its own (their stops,
    :class:`.parts.PartSignal`, share ``directory``): a thread that looks at the phase's tools every
    ``every`` seconds and, once one found a stray access, leaves the file that stops every part."""
    if probes is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(every):
            if probes.found():
                (Path(directory) / MEMORY_SIGNAL).touch()
                return

    thread = threading.Thread(target=watch, name="lse-fuzz-memory-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:  # before the phase's report: found() and report() never run at once
        done.set()
        thread.join()


def memory_phase(candidate: Candidate, options: GradeOptions, record: GradeRecord, verdict: Verdict,
                 probes: memory.Probing | None = None) -> Verdict:
    """On a GPU: the probes under compute-sanitizer (:mod:`fuzz.memory`, see :func:`_probes_memory` for
    when; ``probes``: started beside the fuzzing by :func:`probing`, else started now); a finding fails
    its check (``memory_bounds``, ``uninitialized_read``), and what the fuzzing found before is kept
    below it. On the CPU those checks judged every call already."""
    if not _probes_memory(options, record, verdict):
        return verdict
    # Started beside the fuzzing, the phase has had the run's time: the verdict waits WAIT_SECONDS
    # more at most. Started only now, it has the tools' own limit.
    started = probes or _started(candidate.target, options)
    # A finding the fixed probes made already needs no replay of the run's inputs to wait for.
    inputs = [] if probes is not None and probes.found() else run_inputs(record, verdict)
    report = started.report(inputs, most=memory.WAIT_SECONDS if probes else None)
    rest = _left_out(options) if probes is not None else ()
    if report.finding is None and rest and _passed_or_faulted(record, verdict):
        # The tools left out of the start beside the run: only now, as AFTER_PASS starts the phase
        # (``inputs`` are the run's: its own tool found nothing, so none were left out).
        report = memory.merged(report, _started(candidate.target, options, rest).report(inputs))
    record.memory = report.to_dict()
    finding = report.finding
    if finding is None:
        return verdict
    before = [] if verdict is Verdict.PASS else [
        f"  before it: {verdict.label} by the fuzzing: {record.reason.splitlines()[0] if record.reason else ''}",
        *(f"  {line}" for line in (record.details or "").splitlines()[:12])]
    record.check = finding.check
    record.reason = (f"check {finding.check!r} failed: {finding.what} in {finding.kernel}, on the memory phase's "
                     f"probe {finding.probe}")
    record.details = "\n".join([
        f"check {finding.check!r} failed: {finding.what} ({report.ran}, after the fuzzing)",
        f"  probe:    {finding.probe}",
        *(["  result:   the implementation's result holds bytes nothing wrote: the probe read it after the call "
           "(a torch kernel, the one named below), as the CPU refuses such a result"] if finding.in_result else []),
        *(f"  {'access:' if i else 'at:':<9} {line.removeprefix('at ')}" for i, line in enumerate(finding.lines)),
        f"  errors:   {finding.errors} reported in this run",
        f"  why it matters: {CHECKS[finding.check].why}",
        f"  replay:   {report.replay}", *before])
    record.replay = report.replay
    return Verdict.FAIL
