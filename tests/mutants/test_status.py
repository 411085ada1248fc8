"""One mapping from a worker's raw outcome to a mutant status, as a table of cases."""

from __future__ import annotations

import signal

import pytest

from fuzz.mutation import MutantStatus, RawOutcome, classify
from fuzz.mutation_worker import exception_chain


def _chain(*types: str) -> list[dict]:
    return [{"type": t, "mro": [t, "builtins.Exception", "builtins.BaseException", "builtins.object"], "message": ""}
            for t in types]


COMPILATION = {"type": "triton.compiler.errors.CompileTimeAssertionFailure",
               "mro": ["triton.compiler.errors.CompileTimeAssertionFailure", "triton.compiler.errors.CompilationError",
                       "triton.errors.TritonError", "builtins.Exception"], "message": "static_assert failed"}

CASES = [
    ("timeout wins over a result", RawOutcome(result={"outcome": "failed"}, timed_out=True, timeout=9.0),
     MutantStatus.TIMEOUT, "time limit of 9 s"),
    ("timeout without a result", RawOutcome(timed_out=True), MutantStatus.TIMEOUT, "killed"),
    ("segfault", RawOutcome(returncode=-signal.SIGSEGV), MutantStatus.RUNTIME_ERROR, "SIGSEGV"),
    ("abort", RawOutcome(returncode=-signal.SIGABRT, stderr="Fatal Python error: Aborted"),
     MutantStatus.RUNTIME_ERROR, "SIGABRT"),
    ("killed by the kernel (out of memory)", RawOutcome(returncode=-signal.SIGKILL), MutantStatus.RUNTIME_ERROR,
     "SIGKILL"),
    ("exit code without a result", RawOutcome(returncode=3), MutantStatus.RUNTIME_ERROR, "exit code 3"),
    ("exit 0 without a result", RawOutcome(returncode=0), MutantStatus.RUNTIME_ERROR, "without a result"),
    ("passed", RawOutcome(result={"outcome": "passed", "examples": 200}), MutantStatus.SURVIVED, "200 examples"),
    ("failed", RawOutcome(result={"outcome": "failed", "check": "agreement", "message": "check 'agreement' failed"}),
     MutantStatus.KILLED, "agreement"),
    ("flaky is still a failure", RawOutcome(result={"outcome": "flaky", "check": "determinism"}),
     MutantStatus.KILLED, "determinism"),
    ("a failure that came with a signal later", RawOutcome(result={"outcome": "failed", "check": "bounds"},
                                                          returncode=-signal.SIGSEGV), MutantStatus.KILLED, "bounds"),
    ("CompilationError (compiled mode)",
     RawOutcome(result={"outcome": "raised", "exception": _chain("triton.compiler.errors.CompilationError")}),
     MutantStatus.COMPILE_ERROR, ""),
    ("a CompilationError subclass", RawOutcome(result={"outcome": "raised", "exception": [COMPILATION]}),
     MutantStatus.COMPILE_ERROR, ""),
    ("interpreter: AttributeError inside the kernel",
     RawOutcome(result={"outcome": "raised",
                        "exception": _chain("triton.runtime.errors.InterpreterError", "builtins.AttributeError")}),
     MutantStatus.COMPILE_ERROR, ""),
    ("interpreter: a failed device_assert is a runtime error",
     RawOutcome(result={"outcome": "raised",
                        "exception": _chain("triton.runtime.errors.InterpreterError", "builtins.AssertionError")}),
     MutantStatus.RUNTIME_ERROR, ""),
    ("Triton's MLIR pipeline crashed while compiling the kernel",
     RawOutcome(result={"outcome": "raised", "exception": [
         {"type": "builtins.RuntimeError", "mro": ["builtins.RuntimeError"], "message": "PassManager::run failed"}]}),
     MutantStatus.COMPILE_ERROR, ""),
    ("the kernel file does not parse",
     RawOutcome(result={"outcome": "load_failed", "exception": _chain("builtins.SyntaxError")}),
     MutantStatus.COMPILE_ERROR, ""),
    ("the kernel file fails to import", RawOutcome(result={"outcome": "load_failed",
                                                           "exception": _chain("builtins.ImportError")}),
     MutantStatus.RUNTIME_ERROR, ""),
    ("CUDA error from the launch", RawOutcome(result={"outcome": "raised", "message": "CUDA error: illegal address",
                                                      "exception": _chain("builtins.RuntimeError")}),
     MutantStatus.RUNTIME_ERROR, "CUDA error"),
    ("raised without a chain", RawOutcome(result={"outcome": "raised"}), MutantStatus.RUNTIME_ERROR, ""),
]


@pytest.mark.parametrize(("raw", "status", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_mapping_from_raw_outcome_to_status(raw, status, reason):
    got, text = classify(raw)
    assert got is status
    assert reason in text


def test_an_unknown_worker_outcome_is_an_internal_error():
    with pytest.raises(ValueError, match="unknown worker outcome 'exploded'"):
        classify(RawOutcome(result={"outcome": "exploded"}))


def test_stderr_tail_goes_into_the_reason_of_a_crash():
    raw = RawOutcome(returncode=-signal.SIGSEGV, stderr="a\nFatal Python error: Segmentation fault\n")
    status, text = classify(raw)
    assert status is MutantStatus.RUNTIME_ERROR and "Fatal Python error: Segmentation fault" in text


def test_the_status_names_are_strykers_and_their_properties_follow_its_score():
    assert [s.value for s in MutantStatus] == ["Killed", "Survived", "Timeout", "RuntimeError", "CompileError"]
    assert {s for s in MutantStatus if s.detected} == {MutantStatus.KILLED, MutantStatus.TIMEOUT}
    assert {s for s in MutantStatus if not s.valid} == {MutantStatus.RUNTIME_ERROR, MutantStatus.COMPILE_ERROR}


def test_the_exception_chain_keeps_types_causes_and_classes():
    try:
        try:
            raise AttributeError("module 'triton.language' has no attribute 'nope'")
        except AttributeError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as exc:
        chain = exception_chain(exc)
    assert [entry["type"] for entry in chain] == ["builtins.RuntimeError", "builtins.AttributeError"]
    assert "builtins.Exception" in chain[1]["mro"] and "nope" in chain[1]["message"]


def test_the_public_api_is_listed():
    import fuzz.mutation

    for name in fuzz.mutation.__all__:
        assert hasattr(fuzz.mutation, name), name
