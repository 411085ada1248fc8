"""Pieces of one candidate's grading (fuzz.grading.evaluate) that the end-to-end tests of
``lse-fuzz grade`` (test_grade.py) cannot show on a CPU."""

from __future__ import annotations

import importlib
import threading

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
    from fuzz.isolation.pool import Job, JobResult
    from fuzz.outcomes import Outcome

    candidate = Candidate(name="c.py", path="", target="c.py:lse")
    traceback = ('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
                 'RuntimeError: three new grading drivers in a row died\n')
    raised = JobResult(Job("0", "m:f"), Outcome.RAISED, None, 1.0, traceback)
    record = evaluate.job_record(raised, candidate, GradeOptions())
    assert record["verdict"] == "internal_error"
    assert record["reason"] == "the grader failed on it: RuntimeError: three new grading drivers in a row died"
    assert record["details"] == traceback
    crashed = JobResult(Job("0", "m:f"), Outcome.CRASHED, None, 1.0, "its driver was killed by SIGKILL\n  stderr: x")
    assert evaluate.job_record(crashed, candidate, GradeOptions())["reason"] == \
        "the grading driver died: its driver was killed by SIGKILL"
