"""Pieces of one candidate's grading (fuzz.grading.evaluate) that the end-to-end tests of
``lse-fuzz grade`` (test_grade.py) cannot show on a CPU."""

from __future__ import annotations

import importlib
import threading
import time
import traceback
from datetime import timedelta

import pytest

evaluate = importlib.import_module("fuzz.grading.evaluate")  # the module (the package exports the function)


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
