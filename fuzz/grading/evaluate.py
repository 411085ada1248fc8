"""Grading one candidate: static findings, the fuzz suite with the candidate in an isolated worker,
and (on CUDA, when asked) its bandwidth. The result is a :class:`.record.GradeRecord`;
:func:`grade_job` is the same as a job of the worker pool (what ``grade``, ``mutants`` and the
campaign scripts run), which returns the record's JSON.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from reference.errors import InvalidArgument

from . import cpu_slots, static_scan
from .. import memory
from ..gpu_memory import gpu_name, sparse_huge_inputs
from ..calls import ConventionError
from ..costs import Costs
from ..failures import headline, traceback_headline
from ..isolation import IsolatedImpl, Job, JobResult, LoadFailed, Pool, default_memory_limit
from ..outcomes import HarnessError, ImplLost, Outcome, Verdict, verdict_of
from ..runner import CheckResult, check, replay
from .static_scan import Severity
from ..timing import compile_summary, merge_compile_summaries
from .bench import bench_candidate
from .candidates import Candidate
from .fit import fitted
from .blame import blame_signals
from .gpu_lock import GpuLock
from .memory_phase import memory_phase, probing, stop_for, watching
from .options import GradeOptions, driver_environment, torch_threads, use_torch_threads
from .part_queue import Parts
from .parts import PartSignal, decided, decides, ended, merge_parts, not_started, part_count, split
from .record import GradeRecord, MalformedRecord
from .snapshot import materialize, restore_paths

__all__ = ["GRADE_ENTRY", "RUNTIME_FLAGS", "blame_signals", "evaluate", "evaluate_replay", "grade_job", "grading_job",
           "job_record"]

GRADE_ENTRY = "fuzz.grading.evaluate:grade_job"


def grading_job(key: str, candidate: Candidate, options: dict, reproducer_dir: Path | str, *,
                source: str | None = None, lock_dir: str | None = None, baselines: dict | None = None) -> Job:
    """The pool job that grades ``candidate`` (see :func:`grade_job` for the payload's fields);
    ``options`` as :meth:`GradeOptions.to_wire` gives them."""
    return Job(key, GRADE_ENTRY, {"candidate": asdict(candidate), "source": source, "options": options,
                                  "reproducer_dir": str(reproducer_dir), "lock_dir": lock_dir, "baselines": baselines})

RUNTIME_FLAGS = {
    "prints": (Severity.INFO, "wrote to stdout or stderr while running (captured; tolerated)"),
    "mutates_input": (Severity.CHEAT, "changed its input during a call"),
    "impossible_speed": (Severity.CHEAT, "timed faster than reading its input allows (see grading.bench)"),
    "overwrites_output": (Severity.CHEAT, "wrote into an output it had returned while the caller still held it"),
    # Seen by the worker's operator record (fuzz.isolation.worker.op_record), whatever the source hides;
    # as the static flags, beside the verdict: a torch.logsumexp wrapper is correct.
    "runtime_library_lse": (Severity.CHEAT, "ran a library log-sum-exp operator while being called"),
    "runtime_library_softmax": (Severity.CHEAT, "ran a library (log-)softmax operator while being called"),
    "runtime_host_math": (Severity.CHEAT, "ran exp/log operators on tensors outside a kernel while being called"),
    "runtime_float64": (Severity.CHEAT, "computed with float64 tensors outside a kernel on a non-float64 input"),
    "runtime_record_removed": (Severity.CHEAT, "took the grader's operator record off the dispatch stack "
                                               "(what it ran afterwards was not seen)"),
}
"""Flags seen while running (besides the static ones of :data:`fuzz.grading.static_scan.FLAGS`)."""


def base_record(candidate: Candidate, options: GradeOptions) -> GradeRecord:
    """The record of ``candidate`` before it is graded (no verdict yet)."""
    return GradeRecord(candidate=candidate.name, target=candidate.target, sha256=candidate.sha256, key=options.key(),
                       seed=options.seed, seed_id=options.seed_id, options=options.public())


def _memory_limit(options: GradeOptions) -> int | None:
    if options.memory_limit is None:
        return default_memory_limit(options.device, jobs=options.jobs)
    return options.memory_limit


def _isolated(target: str, options: GradeOptions, guard=None) -> IsolatedImpl:
    memory_limit = _memory_limit(options)
    threads = torch_threads(options) if options.threads is None else options.threads
    # The worker applies the call convention itself (fuzz.calls): it loads the target with it.
    impl = IsolatedImpl(options.worker_target(target), device=options.device, call_timeout=options.call_timeout, timeout=options.timeout,
                        compile_timeout=options.compile_timeout,
                        memory_limit=memory_limit, threads=threads)
    impl.guard = guard
    return impl


def _start(impl: IsolatedImpl, record: GradeRecord, started: float, hung: ImplLost | None = None) -> bool:
    """Load the target in its worker; False (and a load_error record) if it cannot be used, or if
    it ``hung`` while loading already (in the shape fit's probe: it would again)."""
    context = _cuda_context_meanwhile(impl.device)
    try:
        if hung is not None:
            raise hung
        impl.start()
    except ImplLost as lost:
        _finish(record, started, impl, verdict=Verdict.LOAD_ERROR,
                reason=f"loading the target failed: the worker {lost.outcome.describe()}: {lost.detail}",
                details=lost.stderr)
        return False
    except LoadFailed as exc:
        record.exception = exc.chain
        _finish(record, started, impl, verdict=Verdict.LOAD_ERROR, reason=str(exc))
        return False
    except HarnessError as exc:  # e.g. no room on the GPU for one more worker's context
        _finish(record, started, impl, verdict=Verdict.INTERNAL_ERROR, **_harness_failed(exc))
        return False
    finally:
        if context is not None:
            context.join()
    return True


def _cuda_context_meanwhile(device: str) -> threading.Thread | None:
    """On a GPU this process needs a CUDA context too (it draws and checks the inputs there). It is
    created in a thread while the worker starts and creates its own, instead of after: on a busy
    host each takes seconds (on an H200 host with 14 drivers: 2.3 s here, 1.5 s in the worker)."""
    if not device.startswith("cuda"):
        return None
    thread = threading.Thread(target=_open_context, args=(device,), name="lse-fuzz-cuda-context", daemon=True)
    thread.start()
    return thread


def _open_context(device: str) -> None:
    try:
        sparse_huge_inputs(device)  # creates the context (and learns how huge inputs are backed)
    except Exception:  # noqa: BLE001 - the run itself meets the same error, and reports it
        pass


def evaluate(
    candidate: Candidate | str,
    options: GradeOptions,
    *,
    reproducer_dir: Path | str,
    guard: Callable[[], contextlib.AbstractContextManager] | None = None,
    exclusive: Callable[[], contextlib.AbstractContextManager] | None = None,
    baselines: dict | None = None,
    on_loaded: Callable[[], None] | None = None,
    side_by_side: bool = False,
) -> GradeRecord:
    """Grade one candidate; a record (see the module docstring). Never raises for anything the
    candidate does; InvalidArgument-style problems become a ``load_error`` verdict.

    ``guard`` wraps each call of the candidate (grading shares a GPU: calls hold a shared lock),
    ``exclusive`` the benchmark (which must have the GPU to itself). ``on_loaded`` is called once
    the target has loaded in its worker, before fuzzing starts. A run of several parts (see
    :mod:`fuzz.grading.parts`) runs them one after the other in one worker; with ``side_by_side``,
    each free CPU slot (:mod:`.cpu_slots`), now or once another run gives one back, also starts the
    next part in a driver of its own (:mod:`.part_queue`).
    """
    started = time.monotonic()
    if isinstance(candidate, str):
        try:
            candidate = Candidate.of_target(candidate)
        except InvalidArgument as exc:
            record = base_record(Candidate(candidate, "", candidate), options)
            _finish(record, started, None, verdict=Verdict.LOAD_ERROR, reason=str(exc))
            return record
    # On a GPU the memory phase's probes run beside the fuzzing (fuzz.grading.memory_phase).
    with probing(candidate.target, options) as probes:
        return _evaluate(candidate, options, started, probes, reproducer_dir, guard, exclusive, baselines, on_loaded,
                         side_by_side)


def _evaluate(candidate: Candidate, options: GradeOptions, started: float, probes: memory.Probing | None,
              reproducer_dir: Path | str, guard, exclusive, baselines, on_loaded, side_by_side: bool) -> GradeRecord:
    """The body of :func:`evaluate`: ``candidate`` loaded, ``probes`` started."""
    record = base_record(candidate, options)
    if candidate.path:
        try:
            record.flags = [f.to_dict() for f in static_scan.scan(candidate.path)]
        except (SyntaxError, ValueError, OSError):
            pass  # the worker reports it as a load error
    max_elements, hung = fitted(record, candidate.target, options, memory_limit=_memory_limit(options))
    parts = part_count(options)
    each = split(options, parts, max_elements=max_elements) if parts > 1 and hung is None else None
    helpers = None
    if each and side_by_side:  # helpers start now: their workers' starts overlap this one's
        each, helpers = _helpers(candidate, each, cpu_slots.take(parts), reproducer_dir)
    try:
        return _graded(candidate, options, record, started, probes, reproducer_dir, guard, exclusive, baselines,
                       on_loaded, max_elements, hung, each, helpers)
    finally:
        if helpers is not None:
            helpers.abandon()  # nothing once they finished


def _graded(candidate: Candidate, options: GradeOptions, record: GradeRecord, started: float,
            probes: memory.Probing | None, reproducer_dir: Path | str, guard, exclusive, baselines, on_loaded,
            max_elements: int | None, hung: ImplLost | None, each: list[GradeOptions] | None,
            helpers: Parts | None) -> GradeRecord:
    """The rest of :func:`_evaluate`: the target loaded in its worker, the run (its parts in turn,
    ``helpers`` running others beside), the memory phase and the benchmark."""
    try:
        impl = _isolated(candidate.target, options, guard)
    except InvalidArgument as exc:
        _finish(record, started, None, verdict=Verdict.LOAD_ERROR, reason=str(exc))
        return record
    if not _start(impl, record, started, hung):
        return record
    if on_loaded is not None:
        on_loaded()
    try:
        if each:
            verdict = _in_turn(impl, candidate, each, record, reproducer_dir=reproducer_dir, probes=probes,
                               helpers=helpers)
        else:
            verdict = _record_result(record, _fuzz(impl, candidate, options, max_elements, reproducer_dir, probes))
    except ImplLost as lost:
        return _lost(record, lost, started, impl, candidate, options, probes)
    except HarnessError as exc:  # no verdict on the candidate: the run could not go on
        _finish(record, started, impl, verdict=Verdict.INTERNAL_ERROR, **_harness_failed(exc))
        return record
    except ConventionError as exc:  # its result has another structure than declared: it cannot be used so
        _finish(record, started, impl, verdict=Verdict.LOAD_ERROR, reason=str(exc))
        return record
    except BaseException:  # Ctrl-C, or a bug here: do not leave the worker behind
        impl.close()
        raise
    verdict = memory_phase(candidate, options, record, verdict, probes)
    if verdict is Verdict.PASS and _benches(options):
        _bench(impl, options, record, exclusive=exclusive, baselines=baselines)
    _finish(record, started, impl, verdict=verdict)
    return record


def _lost(record: GradeRecord, lost: ImplLost, started: float, impl: IsolatedImpl, candidate: Candidate,
          options: GradeOptions, probes: memory.Probing | None) -> GradeRecord:
    """The worker was lost: its crash (or hang, or exit) is the verdict, unless the GPU reported a
    kernel's fault and the memory phase names the stray access behind it."""
    _record_lost(record, lost)
    _finish(record, started, impl, verdict=verdict_of(outcome=lost.outcome))
    record.verdict = memory_phase(candidate, options, record, record.verdict, probes)
    record.seconds = round(time.monotonic() - started, 3)
    return record


def _fuzz(impl: IsolatedImpl, candidate: Candidate, options: GradeOptions, max_elements: int | None,
          reproducer_dir: Path | str, probes: memory.Probing | None = None) -> CheckResult:
    return check(impl, budget=options.budget, seed=options.effective_seed, device=options.device,
                 contract=options.declared(), checks=options.checks, profile=options.profile,
                 reproducer_dir=reproducer_dir, huge_offsets=options.huge_offsets,
                 max_elements=max_elements, time_limit=options.time_limit, target=candidate.target,
                 backward=options.backward, shrink_seconds=options.shrink_seconds, stop=stop_for(options, probes),
                 share=options.share)


def _in_turn(impl: IsolatedImpl, candidate: Candidate, each: list[GradeOptions], record: GradeRecord, *,
             reproducer_dir: Path | str, probes: memory.Probing | None, helpers: Parts | None = None) -> Verdict:
    """The parts' runs one after another in ``impl``'s worker, up to the first that decides the
    verdict (the later ones cannot change it, see :func:`.parts.decided`), merged into ``record``.
    One worker serves them all, as it serves every example of one run: a part costs no start of
    its own (on a GPU a worker's start and its CUDA context cost seconds). With ``helpers``
    (:func:`_helpers`), the parts this worker claims, while helpers run others beside it; a part
    not started once one failed gets a record saying so."""
    records: dict[int, GradeRecord] = {}
    stop_dir = each[0].stop_dir  # the parts' shared stop (_helpers), None without helpers
    with watching(probes, stop_dir) if helpers else contextlib.nullcontext():
        for index in iter(helpers.claim, None) if helpers else range(len(each)):
            part, began, calls = base_record(candidate, each[index]), time.monotonic(), impl.calls
            try:
                part.verdict = _record_result(part, _fuzz(impl, candidate, each[index], each[index].max_elements,
                                                          reproducer_dir, probes))
            except ImplLost as lost:  # the worker is gone: this part decides
                _record_lost(part, lost)
                part.verdict = verdict_of(outcome=lost.outcome)
            part.seconds, part.calls = round(time.monotonic() - began, 3), impl.calls - calls
            records[index] = helpers.keep(index, part) if helpers else part
            if decides(part.verdict):
                if helpers is not None:  # a crash or timeout says nothing to the others itself: now they stop
                    PartSignal(stop_dir).failed()
                break
    if helpers is None:
        merge_parts(record, list(records.values()))
    else:
        done = helpers.finish()
        merge_parts(record, decided([ended(*done[i]) if i in done else not_started(base_record(candidate, options))
                                     for i, options in enumerate(each)]))
    record.calls -= sum(part.calls for part in records.values())  # this worker's: _finish adds them all
    return record.verdict


def _benches(options: GradeOptions) -> bool:
    return options.bench and options.device.startswith("cuda")


def _bench(impl: IsolatedImpl, options: GradeOptions, record: GradeRecord, *, exclusive,
           baselines: dict | None) -> None:
    try:
        with exclusive() if exclusive else contextlib.nullcontext():
            record.bench = bench_candidate(impl, options, baselines)
    except ImplLost as lost:
        record.bench = {"error": f"{lost.outcome.value}: {lost.detail}"}
    except Exception as exc:
        record.bench = {"error": f"{type(exc).__name__}: {exc}"}
    if record.bench.get("impossible"):
        record.flags.append(_runtime_flag("impossible_speed", record.bench["impossible"]))


def _helpers(candidate: Candidate, each: list[GradeOptions], slots: cpu_slots.Slots,
             reproducer_dir: Path | str) -> tuple[list[GradeOptions], Parts]:
    """The parts' options with the stop they share (:class:`.parts.PartSignal`, a directory), and
    their :class:`.part_queue.Parts`, dispatching at once: each part a helper claims runs in a
    grading driver of its own (the same function, :func:`grade_job`), while this process's worker
    runs the others (:func:`_in_turn`). ``slots``: those this run took at its start, one its own."""
    signals = tempfile.mkdtemp(prefix="lse-fuzz-parts-")
    each, held, pools = [replace(options, stop_dir=signals) for options in each], slots.one_each(), []
    own = held.pop() if held else None

    def helper(index: int) -> GradeRecord:
        job = grading_job(str(index), candidate, each[index].to_wire(), Path(reproducer_dir).resolve())
        with Pool(1, environ=driver_environment(each[0])) as pool:
            pools.append(pool)
            return job_record(list(pool.run([job]))[0], candidate, each[index])

    def stopped() -> bool:
        try:
            return any(Path(signals).iterdir())
        except OSError:  # the run is over
            return True

    def close() -> None:  # the helpers' drivers and their workers go too (Ctrl-C, a target that did not load)
        for pool in list(pools):
            pool.close()
        shutil.rmtree(signals, ignore_errors=True)
        if own is not None:
            own.release()

    return each, Parts(len(each), helper=helper, held=held, take=lambda: cpu_slots.take(1), stopped=stopped,
                       close=close).start()


def job_record(result: JobResult, candidate: Candidate, options: GradeOptions) -> GradeRecord:
    """The record of a job: what the driver returned, or what became of the driver."""
    headline = _headline(result)
    if result.outcome is Outcome.RETURNED and result.record is not None:
        try:
            return GradeRecord.from_json(result.record)
        except MalformedRecord as exc:  # the driver is the grader's own code: a bug to report
            headline = f"the driver returned a malformed record ({exc})"
    record = base_record(candidate, options)
    verdict = Verdict.TIMEOUT if result.outcome is Outcome.TIMEOUT else Verdict.INTERNAL_ERROR
    what = {Outcome.TIMEOUT: "the grader stopped it", Outcome.RAISED: "the grader failed on it"}.get(
        result.outcome, "the grading driver died")
    if result.killed_fork_server or result.killed_its_driver:  # its doing, shown by running it alone
        verdict, what = Verdict.CRASH, "it attacked the grader"
    record.verdict, record.reason, record.details = verdict, f"{what}: {headline}", result.detail
    record.seconds = round(result.seconds, 3)
    return record


def _headline(result: JobResult) -> str:
    """The line of a job's detail that says what happened: a traceback's exception (a group's with
    its leaves; never its last line, a border), otherwise the first (what became of the driver)."""
    if result.outcome is Outcome.RAISED:
        return traceback_headline(result.detail or "")
    return next((line for line in (result.detail or "").splitlines() if line.strip()), "")


def _harness_failed(exc: HarnessError) -> dict[str, str]:
    """The reason (one line naming the cause) and details of a run the harness could not finish."""
    return {"reason": f"the harness failed: {headline(exc).partition(': ')[2]}",
            "details": "".join(traceback.format_exception(exc)).rstrip()}


def _record_lost(record: GradeRecord, lost: ImplLost) -> None:
    record.reason = f"{lost.outcome.describe()}: {lost.detail}"
    record.details = lost.stderr
    if lost.reproducer is not None:
        record.reproducer = str(lost.reproducer)
        record.replay = lost.replay
    if lost.example is not None:
        example = lost.example
        record.counterexample = {
            "description": example.describe(), "shape": list(example.shape),
            "dtype": str(example.dtype).replace("torch.", ""), "layout": example.layout.to_dict(),
            "call": lost.call,
        }


def _record_result(record: GradeRecord, result: CheckResult) -> Verdict:
    record.result = result.to_dict()
    record.costs = record.result["costs"]
    record.slow = record.result["slow"]
    record.examples = result.examples
    record.check = result.check
    if result.failure is not None:
        record.details = result.failure.message()
        record.replay = result.failure.replay
        record.reproducer = None if result.reproducer is None else str(result.reproducer)
        head = result.failure.message().splitlines()[0]
        record.reason = head if result.status.value != "flaky" else f"flaky: {head}"
        record.exception = getattr(result.failure, "chain", None)
        if result.counterexample is not None:
            record.counterexample = record.result["counterexample"]
    else:
        record.reason = f"{result.examples} examples passed every check"
    return verdict_of(status=result.status)


def _finish(record: GradeRecord, started: float, impl: IsolatedImpl | None, *, verdict: Verdict,
            reason: str | None = None, details: str | None = None) -> None:
    if impl is not None:
        impl.close()
        if record.costs is not None:  # the worker's start is the run's too
            record.costs = Costs.from_dict(record.costs).add(Costs(worker_start_seconds=impl.load_seconds)).to_dict()
        # Added to the helpers' (parts run beside this worker), none in a run of one worker.
        record.calls = (record.calls or 0) + impl.calls
        record.candidate_seconds = round((record.candidate_seconds or 0.0) + impl.candidate_seconds, 3)
        record.compiles = merge_compile_summaries([record.compiles, compile_summary(impl.compiles)])  # also mid-compile
        noise = impl.noise()
        if noise.any:
            record.noise = noise.to_dict()
        if impl.input_changes and record.check != "input_unchanged":
            # The runner compares the input after an example's first call only; the worker sees
            # every call, so a candidate that writes into its input later is flagged here.
            record.flags.append(_runtime_flag("mutates_input", f"changed its input in {impl.input_changes} of "
                                              f"{impl.calls} calls (input_unchanged inspects an example's first "
                                              "call only)"))
        if impl.output_changes:
            record.flags.append(_runtime_flag("overwrites_output", f"changed an output the caller still held "
                                              f"after {impl.output_changes} of {impl.calls} calls"))
        for flag, operators in sorted(impl.runtime_ops.items()):
            if flag in RUNTIME_FLAGS:  # a name the worker sent: only known ones are reported
                seen = f": {', '.join(sorted(operators))}" if operators else ""
                record.flags.append(_runtime_flag(flag, f"{RUNTIME_FLAGS[flag][1]}{seen}"))
        # A lost worker's stderr is its crash report, not noise.
        if noise.any and verdict not in (Verdict.CRASH, Verdict.TIMEOUT, Verdict.LOAD_ERROR):
            record.flags.append(_runtime_flag("prints", f"printed while running: {noise.describe()}"))
    record.verdict = verdict
    if reason is not None:
        record.reason = reason
    if details is not None:
        record.details = details
    record.seconds = round(time.monotonic() - started, 3)


def _runtime_flag(flag: str, message: str) -> dict:
    return {"flag": flag, "severity": RUNTIME_FLAGS[flag][0].value, "message": message, "lines": []}


def evaluate_replay(target: str, path: Path | str, options: GradeOptions) -> GradeRecord:
    """Run one saved example (a reproducer file) through the candidate in a worker, its checks again."""
    started = time.monotonic()
    record = base_record(Candidate.of_target(target), options)
    record.reproducer = str(path)
    impl = _isolated(target, options)
    if not _start(impl, record, started):
        return record
    try:
        result = replay(path, impl, device=options.device, target=target)
    except ImplLost as lost:
        _record_lost(record, lost)
        _finish(record, started, impl, verdict=verdict_of(outcome=lost.outcome))
        return record
    except BaseException:
        impl.close()
        raise
    verdict = _record_result(record, result)
    if result.failure is None:
        record.reason = "the saved example passes now"
    _finish(record, started, impl, verdict=verdict)
    return record


_LOCKS: dict[str, GpuLock] = {}


def grade_job(payload: dict) -> dict[str, object]:
    """The worker pool's entry for one candidate: ``payload`` holds ``candidate`` (a Candidate's
    fields), ``options`` (:meth:`GradeOptions.to_wire`), ``reproducer_dir``, and optionally
    ``source`` (the file's bytes, :func:`.snapshot.encode`: a private copy of them is graded),
    ``lock_dir`` (a GPU shared by several drivers) and ``baselines`` (bandwidth of the references)."""
    options = GradeOptions.from_wire(payload["options"])
    use_torch_threads(options)
    lock = None
    if payload.get("lock_dir"):
        if payload["lock_dir"] not in _LOCKS:
            _LOCKS[payload["lock_dir"]] = GpuLock(payload["lock_dir"], gpu=gpu_name())
        lock = _LOCKS[payload["lock_dir"]]
    # A batch's candidate comes as the bytes read when the batch started (grading.snapshot).
    candidate, originals = materialize(Candidate(**payload["candidate"]), payload.get("source"))
    record = evaluate(candidate, options, reproducer_dir=payload["reproducer_dir"],
                      guard=lock.shared if lock else None, exclusive=lock.exclusive if lock else None,
                      baselines=payload.get("baselines"))
    return restore_paths(record.to_json(), originals)

