"""The memory phase of a grading on a GPU (:mod:`fuzz.memory`): when it runs, and how a finding
becomes the record's verdict."""

from __future__ import annotations

import contextlib
import os

from .. import memory
from ..checks import CHECKS
from ..contract import Layouts, dtype_name
from ..outcomes import Verdict
from .candidates import Candidate
from .options import GradeOptions, MemoryPhase
from .record import GradeRecord

__all__ = ["memory_phase", "probing", "run_inputs"]

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
    if verdict is Verdict.PASS:
        return True
    if verdict is Verdict.FAIL:
        return options.memory is MemoryPhase.BESIDE and record.check not in (*memory.MEMORY_CHECKS, "time_limit")
    return verdict is Verdict.CRASH and any(s in f"{record.reason}\n{record.details}" for s in _KERNEL_FAULT)


def _started(target: str, options: GradeOptions) -> memory.Probing:
    contract = options.declared()
    return memory.start(options.worker_target(target), checks=options.checks or tuple(CHECKS),
                        dtype=dtype_name(contract.dtypes[0]), device=options.device, max_n=contract.max_n,
                        contiguous=contract.layouts is Layouts.CONTIGUOUS, huge=options.huge_offsets)


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
    probes = _started(target, options)
    try:
        yield probes
    finally:
        probes.cancel()


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
    report = started.report(run_inputs(record, verdict), most=memory.WAIT_SECONDS if probes else None)
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
        *([f"  result:   the implementation's result holds bytes nothing wrote: the probe read it after the call "
           "(a torch kernel, the one named below), as the CPU refuses such a result"] if finding.in_result else []),
        *(f"  {'access:' if i else 'at:':<9} {line.removeprefix('at ')}" for i, line in enumerate(finding.lines)),
        f"  errors:   {finding.errors} reported in this run",
        f"  why it matters: {CHECKS[finding.check].why}",
        f"  replay:   {report.replay}", *before])
    record.replay = report.replay
    return Verdict.FAIL
