"""Pieces of one candidate's grading (fuzz.grading.evaluate) that the end-to-end tests of
``lse-fuzz grade`` (test_grade.py) cannot show on a CPU."""

from __future__ import annotations

import json
import importlib
import threading
import time
import traceback
from datetime import timedelta

import pytest
import torch

evaluate = importlib.import_module("fuzz.grading.evaluate")  # the module (the package exports the function)
memory_phase_module = importlib.import_module("fuzz.grading.memory_phase")
memory_phase = memory_phase_module.memory_phase


def test_on_a_gpu_the_graders_cuda_context_opens_while_the_worker_starts(monkeypatch):
    # Each of the two processes needs a context of its own, seconds each on a busy host: the
    # grader's opens in a thread while its worker starts, not after it.
    opened = []
    monkeypatch.setattr(evaluate, "sparse_huge_inputs",
                        lambda device: opened.append((device, threading.current_thread().name)))
    assert evaluate._cuda_context_meanwhile("cpu") is None
    thread = evaluate._cuda_context_meanwhile("cuda:1")
    thread.join()
    assert opened == [("cuda:1", "lse-fuzz-cuda-context")]
    monkeypatch.setattr(evaluate, "sparse_huge_inputs", lambda device: 1 / 0)
    evaluate._open_context("cuda")  # the run meets the same error itself, and reports it


def test_a_job_that_raised_is_reported_by_its_exception_not_by_the_traceback_header():
    from fuzz.grading import GradeOptions
    from fuzz.grading.candidates import Candidate
    from fuzz.isolation import Job, JobResult
    from fuzz.outcomes import Outcome

    candidate = Candidate(name="c.py", path="", target="c.py:lse")
    traceback = ('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
                 'RuntimeError: three new grading drivers in a row died\n')
    raised = JobResult(Job("0", "m:f"), Outcome.RAISED, None, 1.0, traceback)
    record = evaluate.job_record(raised, candidate, GradeOptions())
    assert record.verdict == "internal_error"
    assert record.reason == "the grader failed on it: RuntimeError: three new grading drivers in a row died"
    assert record.details == traceback
    crashed = JobResult(Job("0", "m:f"), Outcome.CRASHED, None, 1.0, "its driver was killed by SIGKILL\n  stderr: x")
    assert evaluate.job_record(crashed, candidate, GradeOptions()).reason == \
        "the grading driver died: its driver was killed by SIGKILL"


# --------------------------------------------------------------------------------------------
# Every internal_error names its cause in one line: whatever the shape of the exception


def _chained() -> BaseException:
    try:
        raise ValueError("inner")
    except ValueError as exc:
        raise RuntimeError("outer") from exc


def _during_handling() -> BaseException:
    try:
        raise ValueError("inner")
    except ValueError:
        raise RuntimeError("outer")  # noqa: B904 - the implicit context is the shape under test


def _flaky_failure() -> BaseException:
    from hypothesis.errors import FlakyFailure

    from reference.errors import InvalidArgument

    # What Hypothesis raised when the driver's timing of a slow call failed once (a GPU host).
    cause = InvalidArgument("x.device='cpu', but Triton kernels are compiled for CUDA here")
    return FlakyFailure("Hypothesis run_one(example=<LseInput float64 (1, 1)>) produces unreliable results: "
                        "Falsified on the first call but did not on a subsequent one", [cause])


def _deadline() -> BaseException:
    from hypothesis.errors import DeadlineExceeded

    return DeadlineExceeded(timedelta(seconds=10.1), timedelta(milliseconds=200))


def _flaky() -> BaseException:
    from hypothesis.errors import Flaky

    return Flaky("Inconsistent results from replaying a test case")


# shape: (makes the exception (raising it, or returning it to be raised), its headline)
SHAPES = {
    "plain": (lambda: RuntimeError("boom"), "RuntimeError: boom"),
    "chained": (_chained, "RuntimeError: outer (caused by ValueError: inner)"),
    "during-handling": (_during_handling, "RuntimeError: outer (caused by ValueError: inner)"),
    "nested-group": (lambda: ExceptionGroup("outer", [ValueError("a"), ExceptionGroup("inner", [TypeError("b")])]),
                     "ExceptionGroup: outer (ValueError: a; TypeError: b)"),
    "hypothesis-flaky-failure": (_flaky_failure, "FlakyFailure: the failure did not reproduce when Hypothesis ran "
                                 "the same example again (InvalidArgument: x.device='cpu', but Triton kernels are "
                                 "compiled for CUDA here)"),
    "hypothesis-flaky": (_flaky, "Flaky: Inconsistent results from replaying a test case"),
    "hypothesis-deadline": (_deadline, "DeadlineExceeded: Test took 10100.00ms, which exceeds the deadline of "
                            "200.00ms. If you expect test cases to take this long, you can use @settings(deadline="
                            "...) to either set a higher deadline, or to disable it with deadline=None."),
    "message-in-a-box": (lambda: RuntimeError("+------------------------------------\n| ValueError: x\n+------"),
                         "RuntimeError: ValueError: x"),
    "message-is-a-traceback": (lambda: RuntimeError('Traceback (most recent call last):\n  File "x.py", line 1, '
                                                    "in <module>\nKeyError: 'k'"), "RuntimeError: KeyError: 'k'"),
    "rich-table-border": (lambda: RuntimeError("┏━━━━━┳━━━━━┓\n┃ the table ┃\n┗━━━━━┛"), "RuntimeError: ┃ the table ┃"),
}


def raised(make) -> BaseException:
    """The exception as it is when caught: raised once (a traceback, and a context when chained)."""
    try:
        exc = make()
        raise exc
    except BaseException as caught:  # noqa: BLE001 - every shape, groups included
        return caught


def one_line_naming(reason: str, cause: str) -> None:
    assert cause in reason, reason
    assert "\n" not in reason and "+---" not in reason and "Traceback" not in reason, reason


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_exception_shape_is_one_line_naming_its_cause(shape):
    from fuzz.failures import headline
    from fuzz.grading import GradeOptions
    from fuzz.grading.candidates import Candidate
    from fuzz.isolation import Job, JobResult
    from fuzz.outcomes import Outcome

    make, expected = SHAPES[shape]
    exc = raised(make)
    assert headline(exc) == expected
    # What a pool's driver sends when a grading job raised: the rendered traceback.
    rendered = "".join(traceback.format_exception(exc))
    raised_job = JobResult(Job("0", "m:f"), Outcome.RAISED, None, 1.0, rendered)
    record = evaluate.job_record(raised_job, Candidate(name="c.py", path="", target="c.py:lse"), GradeOptions())
    assert record.verdict == "internal_error" and record.details == rendered
    assert record.reason == f"the grader failed on it: {expected}"
    one_line_naming(record.reason, expected)


class SlowFifthCall:
    """In process: right answers, and the fifth call is slow (past the patched slow floor)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x):
        import torch

        self.calls += 1
        if self.calls == 5:
            time.sleep(0.2)
        return torch.logsumexp(x.double(), dim=1).to(torch.float64 if x.dtype == torch.float64 else torch.float32)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_harness_failing_on_a_slow_call_ends_the_run_with_one_line_naming_the_cause(shape, monkeypatch,
                                                                                         tmp_path):
    # The fuzzer's own code raising once, on the one slow call (as timing it against reference.lse
    # did on a GPU host), is no verdict on the implementation: Hypothesis must not replay it into
    # a FlakyFailure, an exception group whose border became the reason.
    from fuzz.outcomes import HarnessError
    from fuzz.runner import check

    make, expected = SHAPES[shape]
    monkeypatch.setattr("fuzz.checks.context.SLOW_FLOOR", 0.1)
    monkeypatch.setattr("fuzz.checks.context.reference_seconds", lambda x: _raise(make))
    with pytest.raises(HarnessError) as caught:
        check(SlowFifthCall(), budget=10, seed=0, max_elements=256, huge_offsets=False, reproducer_dir=tmp_path)
    message = str(caught.value)
    if shape.startswith("hypothesis-"):
        # Hypothesis' own errors go through Hypothesis, which replays the example (fast then) and
        # raises FlakyFailure, or unwraps a group of its own to what is inside: named all the same.
        assert message.startswith("the fuzzer's Hypothesis run raised "), message
        expected = expected.partition(" (")[2].removesuffix(")") if shape.endswith("flaky-failure") else expected
    else:
        assert message.startswith("the fuzzer's own checks failed on ") and ", not the implementation: " in message
    one_line_naming(message, expected)


def _raise(make):
    raise raised(make)


@pytest.mark.parametrize("error", [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB."),
                                   RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be reported "
                                                "asynchronously")])
def test_the_gpu_out_of_memory_in_the_fuzzers_own_checks_says_so(error, monkeypatch, tmp_path):
    # A GPU other processes filled fails the checks' own copies, by the allocator or by the runtime
    # (a launch): no verdict on the implementation, and a message that says what to change.
    from fuzz.outcomes import HarnessError
    from fuzz.runner import check

    def fails(x):
        raise error

    monkeypatch.setattr("fuzz.checks.context.SLOW_FLOOR", 0.1)
    monkeypatch.setattr("fuzz.checks.context.reference_seconds", fails)
    with pytest.raises(HarnessError) as caught:
        check(SlowFifthCall(), budget=10, seed=0, max_elements=256, huge_offsets=False, reproducer_dir=tmp_path)
    message = str(caught.value)
    assert message.startswith("the GPU ran out of memory for the fuzzer's own checks on "), message
    assert message.endswith("Run fewer jobs at once, or pass --no-huge-offsets.") and "\n" not in message


def test_an_import_that_hangs_is_a_load_error_after_the_load_deadline(tmp_path, monkeypatch):
    # tests/implementations/candidates/hangs_on_import.py, graded here (the batch of test_grade.py
    # would wait the whole 60 s deadline for it): load_error, after the load deadline, once.
    from pathlib import Path

    import fuzz.isolation.worker.proxy as proxy
    from fuzz.grading import GradeOptions

    monkeypatch.setattr(proxy, "DEFAULT_LOAD_TIMEOUT", 2.0)  # the grading runs in this process
    candidate = Path(__file__).resolve().parents[2] / "implementations" / "candidates" / "hangs_on_import.py"
    record = evaluate.evaluate(f"{candidate}:lse", GradeOptions(budget=5).validated(), reproducer_dir=tmp_path)
    assert record.verdict.value == "load_error"
    assert record.reason == ("loading the target failed: the worker timed out: no answer within 2 s while loading "
                             "the target (a hang, or far too slow)")


def test_on_a_gpu_a_pass_goes_through_the_memory_phase_and_its_finding_fails_the_check(monkeypatch):
    from fuzz.grading.options import MemoryPhase
    from fuzz.grading import GradeOptions
    from fuzz.grading.candidates import Candidate
    from fuzz.grading.reports import format_record
    from fuzz.memory import MemoryReport, Probing
    from fuzz.memory.sanitizer import Finding
    from fuzz.outcomes import Verdict

    asked = []
    finding = Finding("memory_bounds", "memcheck", "Invalid __global__ write of size 4 bytes",
                      ["at _k+0x10 in k.py:12", "by thread (0,0,0) in block (0,0,0)",
                       "Access to 0x7f0000000c is out of bounds"], probe="3 x 5", errors=3)

    def start(target, **options):
        asked.append((target, options))
        return Probing(MemoryReport("compute-sanitizer memcheck, initcheck", 9.5, 8, finding, [], "REPLAY"))

    monkeypatch.setattr(memory_phase_module.memory, "start", start)
    candidate = Candidate(name="k.py", path="", target="k.py:lse")
    options = GradeOptions(device="cuda")
    record = evaluate.base_record(candidate, options)
    record.check = "memory_bounds"  # found already (on the CPU, or by the phase): nothing to add
    assert memory_phase(candidate, options, record, Verdict.FAIL) is Verdict.FAIL and not asked
    record.check = None
    assert memory_phase(candidate, GradeOptions(), record, Verdict.PASS) is Verdict.PASS and not asked
    part = GradeOptions(device="cuda", memory=MemoryPhase.OFF)  # a part of a run: the run probes once, after its parts
    assert memory_phase(candidate, part, record, Verdict.PASS) is Verdict.PASS and not asked
    record.reason = "crashed: RuntimeError: CUDA error: out of memory"
    assert memory_phase(candidate, options, record, Verdict.CRASH) is Verdict.CRASH and not asked
    assert memory_phase(candidate, options, record, Verdict.PASS) is Verdict.FAIL
    assert asked == [("k.py:lse", {"checks": tuple(memory_phase_module.CHECKS), "dtype": "float32",
                                   "also": ("float16", "float64"), "device": "cuda", "max_n": None,
                                   "contiguous": False, "huge": True})]
    assert record.check == "memory_bounds" and record.replay == "REPLAY" and record.memory["finding"]["probe"] == "3 x 5"
    record.verdict = Verdict.FAIL
    printed = format_record(record)
    assert "FAIL k.py:lse: check 'memory_bounds'" in printed
    assert "  probe:    3 x 5" in printed and "  at:       _k+0x10 in k.py:12" in printed
    assert "  access:   Access to 0x7f0000000c is out of bounds" in printed and "  replay:   REPLAY" in printed

    monkeypatch.setattr(memory_phase_module.memory, "start", lambda target, **options: Probing(MemoryReport(
        "compute-sanitizer memcheck, initcheck", 9.5, 8, None, [], "")))
    clean = evaluate.base_record(candidate, options)
    assert memory_phase(candidate, options, clean, Verdict.PASS) is Verdict.PASS
    clean.verdict, clean.reason = Verdict.PASS, "200 examples passed every check"
    assert ("  memory:   compute-sanitizer memcheck, initcheck on 8 probes, caching allocator off: clean (9.5 s beside the fuzzing, 0.0 s after it)"
            in format_record(clean))


def test_a_result_holding_unwritten_bytes_is_named_as_the_result_not_the_kernel_that_read_it(monkeypatch):
    from fuzz.grading import GradeOptions
    from fuzz.grading.candidates import Candidate
    from fuzz.memory import MemoryReport, Probing
    from fuzz.memory.sanitizer import Finding
    from fuzz.outcomes import Verdict

    read = Finding("uninitialized_read", "initcheck", "Uninitialized __global__ memory read of size 4 bytes",
                   ["at void at::native::vectorized_elementwise_kernel<...>+0x4e0", "Address 0x7f5d6c8a2e00"],
                   probe="1 x 1", errors=20, in_result=True)
    monkeypatch.setattr(memory_phase_module.memory, "start", lambda target, **options: Probing(MemoryReport(
        "compute-sanitizer memcheck, initcheck", 9.5, 11, read, [], "REPLAY")))
    candidate = Candidate(name="k.py", path="", target="k.py:lse")
    record = evaluate.base_record(candidate, GradeOptions(device="cuda"))
    assert memory_phase(candidate, GradeOptions(device="cuda"), record, Verdict.PASS) is Verdict.FAIL
    assert record.check == "uninitialized_read" and "in the implementation's result" in record.reason
    assert "  result:   the implementation's result holds bytes nothing wrote" in record.details
    assert record.memory["finding"]["in_result"] is True


def test_the_memory_phase_replays_the_counterexample_and_the_largest_input_drawn(tmp_path):
    from fuzz.grading import GradeOptions
    from fuzz.grading.candidates import Candidate
    from fuzz.outcomes import Verdict

    record = evaluate.base_record(Candidate(name="k.py", path="", target="k.py:lse"), GradeOptions(device="cuda"))
    largest = {"shape": [31, 4096], "dtype": "float16", "layout": {"kind": "padded", "pad": 5, "step": 1, "offset": 0},
               "description": "float16 (31, 4096) padded(strides=(4101, 1))"}
    record.result = {"largest": largest}
    drawn = {"description": "the largest input drawn, float16 (31, 4096) padded(strides=(4101, 1))",
             "shape": [31, 4096], "dtype": "float16", "layout": largest["layout"]}
    assert memory_phase_module.run_inputs(record, Verdict.PASS) == [drawn]
    saved = tmp_path / "lse-fuzz-agreement-0.pt"
    saved.write_bytes(b"")
    record.reproducer, record.counterexample = str(saved), {"description": "float32 (1, 3) contiguous"}
    assert memory_phase_module.run_inputs(record, Verdict.FAIL) == [
        {"description": "the counterexample, float32 (1, 3) contiguous", "reproducer": str(saved)}, drawn]
    assert memory_phase_module.run_inputs(record, Verdict.PASS) == [drawn]  # a pass has no counterexample
    saved.unlink()
    assert memory_phase_module.run_inputs(record, Verdict.CRASH) == [drawn]  # nothing saved: nothing to replay


def test_on_a_gpu_a_value_failure_or_an_illegal_address_is_named_by_the_memory_phase_when_it_finds_the_access(
        monkeypatch):
    # The CPU stops a bad access before the values are judged; the GPU's phase comes after the fuzzing,
    # so a kernel whose stray read also spoiled its values fails the same check on both devices.
    from fuzz.grading import GradeOptions
    from fuzz.grading.candidates import Candidate
    from fuzz.memory import MemoryReport, Probing
    from fuzz.memory.sanitizer import Finding
    from fuzz.outcomes import Verdict

    finding = Finding("uninitialized_read", "initcheck", "Uninitialized __global__ memory read of size 4 bytes",
                      ["at _combine+0x110 in k.py:51", "Address 0x7f09a48a4008"], probe="3 x 8192", errors=12)
    found = [finding]
    monkeypatch.setattr(memory_phase_module.memory, "start", lambda target, **options: Probing(MemoryReport(
        "compute-sanitizer memcheck, initcheck", 7.0, 8, found[0], [], "REPLAY")))
    candidate = Candidate(name="k.py", path="", target="k.py:lse")
    options = GradeOptions(device="cuda")
    record = evaluate.base_record(candidate, options)
    record.check, record.reason = "agreement", "check 'agreement' failed: row 0 differs from the float64 reference"
    record.details = "check 'agreement' failed: row 0 differs from the float64 reference\n  expected: -inf\n  got: nan"
    assert memory_phase(candidate, options, record, Verdict.FAIL) is Verdict.FAIL
    assert record.check == "uninitialized_read"
    assert record.details.splitlines()[0].startswith("check 'uninitialized_read' failed: Uninitialized __global__")
    assert "  before it: FAIL by the fuzzing: check 'agreement' failed: row 0 differs" in record.details
    assert "    got: nan" in record.details

    crashed = evaluate.base_record(candidate, options)
    crashed.reason = "crashed: AcceleratorError: CUDA error: an illegal memory access was encountered"
    assert memory_phase(candidate, options, crashed, Verdict.CRASH) is Verdict.FAIL
    assert crashed.check == "uninitialized_read" and "before it: CRASH by the fuzzing: crashed:" in crashed.details
    found[0] = None  # the probes do not reach it (a huge offset did): the crash stands, the phase is on record
    again = evaluate.base_record(candidate, options)
    again.reason = "crashed: RuntimeError: CUDA error: an illegal memory access was encountered"
    assert memory_phase(candidate, options, again, Verdict.CRASH) is Verdict.CRASH
    assert again.check is None and again.memory["finding"] is None
    from fuzz.grading.reports import format_record
    again.verdict = Verdict.CRASH
    assert "  memory:   compute-sanitizer memcheck, initcheck on 8 probes, caching allocator off: clean (7.0 s beside the fuzzing, 0.0 s after" in \
        format_record(again)  # the phase ran, and the crash stands


def test_on_a_gpu_the_probes_start_beside_the_fuzzing_and_stop_when_the_run_needs_none(monkeypatch):
    from fuzz.grading.options import MemoryPhase
    from fuzz.grading import GradeOptions
    from fuzz.memory import MemoryReport, Probing

    started, cancelled = [], []

    class Watched(Probing):
        def cancel(self):
            cancelled.append(True)

    def start(target, **options):
        started.append(target)
        return Watched(MemoryReport("compute-sanitizer memcheck, initcheck"))

    monkeypatch.setattr(memory_phase_module.memory, "start", start)
    with memory_phase_module.probing("k.py:lse", GradeOptions(device="cuda")) as probes:
        assert isinstance(probes, Watched) and started == ["k.py:lse"] and not cancelled
    assert cancelled == [True]  # a run that ended without needing them (a load error, a timeout) stops them
    for options in (GradeOptions(), GradeOptions(device="cuda", memory=MemoryPhase.OFF)):
        with memory_phase_module.probing("k.py:lse", options) as probes:
            assert probes is None
    assert started == ["k.py:lse"]


def test_a_run_that_probes_memory_only_after_a_pass_leaves_a_value_checks_failure_as_it_is(monkeypatch):
    # A mutation analysis judges most mutants so (fuzz.mutation.judge.mutant_options): a value check's
    # kill needs no sanitizer processes to rename it; a pass and a kernel fault still go to the phase,
    # which then starts only once it is needed, with the tools' own limit to finish.
    from dataclasses import replace

    from fuzz.grading import GradeOptions
    from fuzz.grading.candidates import Candidate
    from fuzz.grading.options import MemoryPhase
    from fuzz.memory import MemoryReport, Probing
    from fuzz.memory.sanitizer import Finding
    from fuzz.outcomes import Verdict

    finding = Finding("memory_bounds", "memcheck", "Invalid __global__ read of size 4 bytes",
                      ["at _k+0x10 in k.py:12"], probe="3 x 5", errors=1)
    started, waits = [], []

    class Lazy(Probing):
        def report(self, inputs=(), most=None):
            waits.append(most)
            return super().report(inputs, most)

    def start(target, **options):
        started.append(target)
        return Lazy(MemoryReport("compute-sanitizer memcheck, initcheck", 7.0, 8, finding, [], "REPLAY"))

    monkeypatch.setattr(memory_phase_module.memory, "start", start)
    candidate = Candidate(name="k.py", path="", target="k.py:lse")
    after = replace(GradeOptions(device="cuda"), memory=MemoryPhase.AFTER_PASS)
    with memory_phase_module.probing(candidate.target, after) as probes:
        assert probes is None and not started  # nothing beside the fuzzing
    failed = evaluate.base_record(candidate, after)
    failed.check, failed.reason = "agreement", "check 'agreement' failed: row 0 differs"
    assert memory_phase(candidate, after, failed, Verdict.FAIL) is Verdict.FAIL
    assert failed.check == "agreement" and failed.memory is None and not started
    passed = evaluate.base_record(candidate, after)
    assert memory_phase(candidate, after, passed, Verdict.PASS) is Verdict.FAIL
    assert passed.check == "memory_bounds" and started == ["k.py:lse"] and waits == [None]
    crashed = evaluate.base_record(candidate, after)
    crashed.reason = "crashed: AcceleratorError: CUDA error: an illegal memory access was encountered"
    assert memory_phase(candidate, after, crashed, Verdict.CRASH) is Verdict.FAIL and crashed.check == "memory_bounds"
    off = replace(GradeOptions(device="cuda"), memory=MemoryPhase.OFF)
    assert memory_phase(candidate, off, evaluate.base_record(candidate, off), Verdict.PASS) is Verdict.PASS
    assert len(started) == 2
    # The default starts beside the fuzzing and renames a value check's failure, as before.
    beside = GradeOptions(device="cuda")
    with memory_phase_module.probing(candidate.target, beside) as probes:
        again = evaluate.base_record(candidate, beside)
        again.check, again.reason = "agreement", "check 'agreement' failed: row 0 differs"
        assert memory_phase(candidate, beside, again, Verdict.FAIL, probes) is Verdict.FAIL
    assert again.check == "memory_bounds" and waits[-1] == memory_phase_module.memory.WAIT_SECONDS


def test_the_memory_phase_option_travels_to_a_driver_and_stays_out_of_a_default_runs_report():
    from dataclasses import replace

    from fuzz.grading import GradeOptions
    from fuzz.grading.options import MemoryPhase

    default = GradeOptions(device="cuda")
    after = replace(default, memory=MemoryPhase.AFTER_PASS)
    assert GradeOptions.from_wire(json.loads(json.dumps(after.to_wire()))).memory is MemoryPhase.AFTER_PASS
    assert "memory" not in default.public() and after.public()["memory"] == "after_pass"
    assert after.key() != default.key()
