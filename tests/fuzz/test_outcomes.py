"""The one vocabulary (fuzz.outcomes): each level's mapping from raw results, as tables of cases."""

from __future__ import annotations

import signal

import pytest

from fuzz.interpreter.emulation import EmulationUnsupported
from fuzz.failures import CheckFailure, ImplError, Unsupported, exception_chain
from fuzz.outcomes import (
    CHECK_EXIT_CODES,
    ExitCode,
    Limit,
    MutantStatus,
    Outcome,
    Status,
    Verdict,
    batch_exit_code,
    call_outcome,
    describe_exit,
    describe_limit,
    is_compile_error,
    mutant_status,
    run_status,
    verdict_of,
)

# --------------------------------------------------------------------------------------------
# One call

CALLS = [
    ({}, Outcome.RETURNED),
    ({"error_kind": "exception"}, Outcome.RAISED),
    ({"error_kind": "out_of_memory"}, Outcome.OUT_OF_MEMORY),
    ({"error_kind": "file_size_limit"}, Outcome.FILE_SIZE_LIMIT),  # a write refused with EFBIG
    ({"error_kind": "cuda_error"}, Outcome.CRASHED),
    ({"exit_requested": True}, Outcome.EXITED),
    ({"returncode": -signal.SIGSEGV}, Outcome.CRASHED),
    ({"returncode": -signal.SIGABRT}, Outcome.CRASHED),
    ({"returncode": -signal.SIGKILL}, Outcome.CRASHED),
    ({"returncode": -signal.SIGXFSZ}, Outcome.FILE_SIZE_LIMIT),  # the kernel's, past RLIMIT_FSIZE
    ({"returncode": -signal.SIGXCPU}, Outcome.CPU_TIME_LIMIT),  # the kernel's, past RLIMIT_CPU
    ({"returncode": 0}, Outcome.EXITED),
    ({"returncode": 3}, Outcome.EXITED),
    ({"timed_out": True}, Outcome.TIMEOUT),
    ({"timed_out": True, "returncode": -signal.SIGKILL}, Outcome.TIMEOUT),  # we killed it
]


@pytest.mark.parametrize(("raw", "outcome"), CALLS, ids=[f"{o.value}-{sorted(r)}" for r, o in CALLS])
def test_call_outcome_maps_each_raw_result_once(raw, outcome):
    assert call_outcome(**raw) is outcome


def test_only_returned_and_raised_keep_the_worker():
    assert {o for o in Outcome if not o.fatal} == {Outcome.RETURNED, Outcome.RAISED}


@pytest.mark.parametrize(("code", "text"), [
    (-signal.SIGSEGV, "was killed by SIGSEGV (segmentation fault"),
    (-signal.SIGABRT, "was killed by SIGABRT (abort"),
    (-signal.SIGKILL, "out-of-memory killer"),
    (-signal.SIGXFSZ, "past the worker's output-file-size limit"),
    (-signal.SIGXCPU, "past its CPU-time limit"),
    (3, "exited with code 3"),
    (None, "exit code is unknown"),
], ids=["segv", "abrt", "kill", "xfsz", "xcpu", "exit3", "unknown"])
def test_describe_exit_names_the_signal_and_a_likely_cause(code, text):
    assert text in describe_exit(code)


# --------------------------------------------------------------------------------------------
# One fuzz run

STATUSES = {
    "nothing_failed": (None, True, Status.PASSED),
    "check_failed": (CheckFailure("agreement", "row 0 differs"), True, Status.FAILED),
    "impl_raised": (ImplError("the first call", ValueError("boom")), True, Status.ERROR),
    "not_reproduced": (CheckFailure("agreement", "row 0 differs"), False, Status.FLAKY),
    "emulator_refused": (Unsupported("the first call", EmulationUnsupported("libdevice.erfcinv")), True,
                         Status.UNSUPPORTED),
}


@pytest.mark.parametrize("case", STATUSES)
def test_run_status_maps_what_a_run_found_once(case):
    failure, reproduced, status = STATUSES[case]
    assert run_status(failure, reproduced=reproduced) is status


# --------------------------------------------------------------------------------------------
# One candidate

VERDICTS = [
    ({"loaded": False}, Verdict.LOAD_ERROR),
    ({"outcome": Outcome.TIMEOUT}, Verdict.TIMEOUT),
    ({"outcome": Outcome.CRASHED}, Verdict.CRASH),
    ({"outcome": Outcome.EXITED}, Verdict.CRASH),
    ({"outcome": Outcome.OUT_OF_MEMORY}, Verdict.CRASH),
    ({"outcome": Outcome.FILE_SIZE_LIMIT}, Verdict.CRASH),  # a resource limit: a crash, never a failure
    ({"outcome": Outcome.CPU_TIME_LIMIT}, Verdict.CRASH),
    ({"outcome": Outcome.RAISED}, Verdict.ERROR),
    ({"status": Status.PASSED}, Verdict.PASS),
    ({"status": Status.FAILED}, Verdict.FAIL),
    ({"status": Status.FLAKY}, Verdict.FAIL),
    ({"status": Status.ERROR}, Verdict.ERROR),
    ({"status": Status.UNSUPPORTED}, Verdict.UNSUPPORTED),
]


@pytest.mark.parametrize(("raw", "verdict"), VERDICTS, ids=[v.value + "-" + "-".join(map(str, r.values()))
                                                           for r, v in VERDICTS])
def test_verdict_of_maps_each_raw_result_once(raw, verdict):
    assert verdict_of(**raw) is verdict


def test_every_verdict_has_an_exit_code_and_only_pass_is_zero():
    assert set(CHECK_EXIT_CODES) == set(Verdict)
    assert [v for v, code in CHECK_EXIT_CODES.items() if code is ExitCode.OK] == [Verdict.PASS]
    assert CHECK_EXIT_CODES[Verdict.LOAD_ERROR] is ExitCode.USAGE
    assert (ExitCode.FAILED, ExitCode.USAGE, ExitCode.INTERRUPTED) == (1, 2, 130)


def test_unsupported_has_an_exit_code_of_its_own():
    """Neither a failure (1), an error of the target (2) nor of the tool (3): the CPU gave no verdict."""
    assert CHECK_EXIT_CODES[Verdict.UNSUPPORTED] is ExitCode.UNSUPPORTED == 4
    assert [v for v, code in CHECK_EXIT_CODES.items() if code is ExitCode.UNSUPPORTED] == [Verdict.UNSUPPORTED]
    assert len(set(ExitCode)) == len(ExitCode.__members__)  # no two names share a code


BATCHES = [
    ((), ExitCode.OK),
    ((Verdict.PASS, Verdict.PASS), ExitCode.OK),
    ((Verdict.PASS, Verdict.UNSUPPORTED), ExitCode.UNSUPPORTED),  # never counted against the kernel
    ((Verdict.UNSUPPORTED,), ExitCode.UNSUPPORTED),
    ((Verdict.UNSUPPORTED, Verdict.FAIL), ExitCode.FAILED),  # a failure elsewhere is still one
    (("unsupported", "error"), ExitCode.FAILED),
    ((Verdict.PASS, Verdict.INTERNAL_ERROR), ExitCode.FAILED),
]


@pytest.mark.parametrize(("verdicts", "code"), BATCHES, ids=["-".join(map(str, v)) or "empty" for v, _ in BATCHES])
def test_a_batch_exits_unsupported_only_when_nothing_else_fell_short(verdicts, code):
    assert batch_exit_code(verdicts) is code


# --------------------------------------------------------------------------------------------
# One mutant


def _chain(*types: str) -> list[dict]:
    return [{"type": t, "mro": [t, "builtins.Exception", "builtins.BaseException", "builtins.object"], "message": ""}
            for t in types]


COMPILATION = {"type": "triton.compiler.errors.CompileTimeAssertionFailure",
               "mro": ["triton.compiler.errors.CompileTimeAssertionFailure", "triton.compiler.errors.CompilationError",
                       "triton.errors.TritonError", "builtins.Exception"], "message": "static_assert failed"}

MUTANTS = [
    ("a check failed", Verdict.FAIL, [], MutantStatus.KILLED),
    ("every example passed", Verdict.PASS, [], MutantStatus.SURVIVED),
    ("timeout", Verdict.TIMEOUT, [], MutantStatus.TIMEOUT),
    ("the mutated line never ran", Verdict.NOT_RUN, [], MutantStatus.NO_COVERAGE),
    ("the CPU cannot run a construct it uses", Verdict.UNSUPPORTED, [], MutantStatus.IGNORED),
    ("unsupported, whatever chain came with it", Verdict.UNSUPPORTED,
     _chain("triton.runtime.errors.InterpreterError", "fuzz.interpreter.emulation.EmulationUnsupported"), MutantStatus.IGNORED),
    ("crash", Verdict.CRASH, [], MutantStatus.RUNTIME_ERROR),
    ("the harness failed on it", Verdict.INTERNAL_ERROR, [], MutantStatus.RUNTIME_ERROR),
    ("CompilationError (compiled mode)", Verdict.ERROR, _chain("triton.compiler.errors.CompilationError"),
     MutantStatus.COMPILE_ERROR),
    ("a CompilationError subclass", Verdict.ERROR, [COMPILATION], MutantStatus.COMPILE_ERROR),
    ("interpreter: AttributeError inside the kernel", Verdict.ERROR,
     _chain("triton.runtime.errors.InterpreterError", "builtins.AttributeError"), MutantStatus.COMPILE_ERROR),
    ("interpreter: a failed device_assert is a runtime error", Verdict.ERROR,
     _chain("triton.runtime.errors.InterpreterError", "builtins.AssertionError"), MutantStatus.RUNTIME_ERROR),
    ("Triton's MLIR pipeline crashed while compiling the kernel", Verdict.ERROR,
     [{"type": "builtins.RuntimeError", "mro": ["builtins.RuntimeError"], "message": "PassManager::run failed"}],
     MutantStatus.COMPILE_ERROR),
    ("the kernel file does not parse", Verdict.LOAD_ERROR, _chain("builtins.SyntaxError"),
     MutantStatus.COMPILE_ERROR),
    ("the kernel file fails to import", Verdict.LOAD_ERROR, _chain("builtins.ImportError"),
     MutantStatus.RUNTIME_ERROR),
    ("an exception from the launcher", Verdict.ERROR, _chain("builtins.RuntimeError"), MutantStatus.RUNTIME_ERROR),
    ("raised without a chain", Verdict.ERROR, [], MutantStatus.RUNTIME_ERROR),
]


@pytest.mark.parametrize(("verdict", "chain", "status"), [c[1:] for c in MUTANTS], ids=[c[0] for c in MUTANTS])
def test_mutant_status_maps_each_verdict_once(verdict, chain, status):
    assert mutant_status(verdict, chain) is status
    assert mutant_status(verdict.value, chain) is status


def test_every_verdict_maps_to_a_mutant_status():
    # CompileError needs an exception chain; NoCoverage is the mutant never run (not_run).
    assert {mutant_status(v) for v in Verdict} == set(MutantStatus) - {MutantStatus.COMPILE_ERROR}


def test_the_status_names_are_strykers_and_their_properties_follow_its_score():
    assert [s.value for s in MutantStatus] == ["Killed", "Survived", "Timeout", "RuntimeError", "CompileError",
                                              "NoCoverage", "Ignored"]
    assert {s for s in MutantStatus if s.detected} == {MutantStatus.KILLED, MutantStatus.TIMEOUT}
    # An Ignored mutant (unsupported on the CPU) is neither killed nor survived: out of the score.
    assert {s for s in MutantStatus if not s.valid} == {MutantStatus.RUNTIME_ERROR, MutantStatus.COMPILE_ERROR,
                                                        MutantStatus.IGNORED}


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
    assert not is_compile_error(chain)


def test_a_chain_from_the_worker_is_used_as_it_came():
    remote = _chain("triton.runtime.errors.InterpreterError", "builtins.AttributeError")

    class Raised(Exception):
        remote_chain = remote

    error = ImplError("the first call", Raised("boom"))
    assert error.chain == remote and is_compile_error(error.chain)


# --------------------------------------------------------------------------------------------
# One spelling


def test_unsupported_is_spelled_one_way_where_it_has_a_name_of_ours():
    assert Status.UNSUPPORTED.value == Verdict.UNSUPPORTED.value == ExitCode.UNSUPPORTED.name.lower() == "unsupported"


def test_a_timeout_is_spelled_one_way_at_every_level():
    """``timeout`` as a call's outcome and a candidate's verdict, ``Timeout`` among Stryker's names."""
    assert Outcome.TIMEOUT.value == Verdict.TIMEOUT.value == MutantStatus.TIMEOUT.value.lower() == "timeout"
    values = [member.value.lower() for family in (Outcome, Status, Verdict, MutantStatus) for member in family]
    assert not [value for value in values if "timed" in value or value.startswith("time") and value != "timeout"]


def test_an_old_timed_out_outcome_is_still_read():
    assert Outcome("timed_out") is Outcome.TIMEOUT and Outcome("timeout") is Outcome.TIMEOUT
    with pytest.raises(ValueError):
        Outcome("timedout")


@pytest.mark.parametrize("outcome, words", [(Outcome.TIMEOUT, "timed out"), (Outcome.OUT_OF_MEMORY, "out of memory"),
                                            (Outcome.CRASHED, "crashed"),
                                            (Outcome.FILE_SIZE_LIMIT, "ran into a resource limit"),
                                            (Outcome.CPU_TIME_LIMIT, "ran into a resource limit")])
def test_an_outcome_in_words(outcome, words):
    assert outcome.describe() == words


def test_each_resource_limit_is_one_outcome_and_named_with_its_value():
    assert {o: o.limit for o in Outcome if o.limit is not None} == {
        Outcome.OUT_OF_MEMORY: Limit.ADDRESS_SPACE, Outcome.FILE_SIZE_LIMIT: Limit.FILE_SIZE,
        Outcome.CPU_TIME_LIMIT: Limit.CPU_TIME}
    assert describe_limit(Limit.FILE_SIZE, 64 << 20, how="it wrote to stdout/stderr past it") == \
        "the worker exceeded the output-file-size limit of 64 MiB (it wrote to stdout/stderr past it)"
    assert describe_limit(Limit.ADDRESS_SPACE, 22 << 30) == "the worker exceeded the address-space limit of 22 GiB"
    assert describe_limit(Limit.CPU_TIME, 900) == "the worker exceeded the CPU-time limit of 900 s"
    assert describe_limit(Limit.CPU_TIME, None) == "the worker exceeded the CPU-time limit"


def test_no_verdict_of_a_run_is_not_run():
    """not_run is for a mutant never graded: no raw result of a graded target maps to it."""
    results = [{"loaded": False}, *({"outcome": o} for o in Outcome), *({"status": s} for s in Status)]
    assert Verdict.NOT_RUN not in {verdict_of(**result) for result in results}
