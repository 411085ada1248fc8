"""The one vocabulary of results, from a single call to a whole mutation analysis, and its mappings.

Four levels, each an enum with one tested mapping from the level below:

* :class:`Outcome`: how one call of an isolated implementation ended (or one job of the worker
  pool): it returned, raised, crashed, exited, ran out of memory, ran into another of the worker's
  resource limits (:class:`Limit`) or timed out (:func:`call_outcome` maps exit codes, worker
  replies and timeouts to it);
* :class:`Status`: how a fuzz run (``lse_fuzz.check``) ended (:func:`run_status`);
* :class:`Verdict`: what became of one candidate in ``lse-fuzz check`` and ``grade``
  (:func:`verdict_of`), and the exit code of ``check`` (:data:`CHECK_EXIT_CODES`);
* :class:`MutantStatus`: what became of one mutant, in Stryker's names (:func:`mutant_status`).

A status is spelled one way at every level: ``timeout`` (``Timeout`` among Stryker's CamelCase
names), and a mutant that never ran is ``not_run`` (``NoCoverage``), never ``pass``. A run that met
a construct the CPU's emulation of Triton cannot run as a GPU does (:mod:`fuzz.interpreter.emulation`) is
``unsupported`` at every level (``Ignored`` among Stryker's names): neither a failure nor a pass,
with an exit code of its own (:attr:`ExitCode.UNSUPPORTED`), and the report names the construct.

:class:`ImplLost` is raised when an isolated implementation's worker is gone (crash, exit, hang,
out of memory): a ``BaseException`` on purpose, so that neither the runner's ``except Exception``
nor Hypothesis catches it and shrinks (every shrinking step would restart a worker and wait for a
timeout).
"""

from __future__ import annotations

import enum
import signal
from collections.abc import Iterable, Sequence

from lse_fuzz._errors import LseFuzzError

from .failures import CheckFailure, ImplError, Unsupported

__all__ = [
    "CHECK_EXIT_CODES",
    "ExitCode",
    "HarnessError",
    "ImplLost",
    "Limit",
    "MutantStatus",
    "Outcome",
    "Status",
    "Verdict",
    "batch_exit_code",
    "call_outcome",
    "describe_exit",
    "describe_limit",
    "is_compile_error",
    "mutant_status",
    "run_status",
    "verdict_of",
]


class ExitCode(enum.IntEnum):
    """Exit codes of the ``lse-fuzz`` commands."""

    OK = 0  # passed / every mutant killed
    FAILED = 1  # a check failed, a candidate did not pass, a mutant was not killed
    USAGE = 2  # the target, the options or the gate cannot be used: one line on stderr
    INTERNAL = 3  # the tool itself failed (a bug to report)
    UNSUPPORTED = 4  # no verdict on this device: the CPU cannot run a construct the kernel uses (--device cuda)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: reports hold what finished


# --------------------------------------------------------------------------------------------
# One call


class Outcome(str, enum.Enum):
    """How one call of the candidate (or one job of the worker pool) ended."""

    RETURNED = "returned"  # it returned something; the checks judge what
    RAISED = "raised"  # it raised an exception; the worker lives on
    CRASHED = "crashed"  # the worker was killed by a signal (segfault, abort) or a CUDA error
    EXITED = "exited"  # the worker exited: sys.exit, os._exit, exit() in native code
    OUT_OF_MEMORY = "out_of_memory"  # an allocation failed (the address-space limit, GPU memory)
    FILE_SIZE_LIMIT = "file_size_limit"  # it wrote (printed) past the output-file-size limit: EFBIG or SIGXFSZ
    CPU_TIME_LIMIT = "cpu_time_limit"  # it ran past a CPU-time limit: SIGXCPU
    TIMEOUT = "timeout"  # no answer within the time limit: killed

    @classmethod
    def _missing_(cls, value):
        # Reproducer files written before the timeout status had one spelling say "timed_out".
        return cls.TIMEOUT if value == "timed_out" else None

    @property
    def fatal(self) -> bool:
        """The worker is gone (or unusable): the run stops."""
        return self not in (Outcome.RETURNED, Outcome.RAISED)

    def describe(self) -> str:
        """The outcome in words, for a sentence: 'timed out', 'out of memory', 'crashed', 'ran into
        a resource limit'."""
        if self is Outcome.TIMEOUT:
            return "timed out"
        if self.limit is not None and self is not Outcome.OUT_OF_MEMORY:
            return "ran into a resource limit"
        return self.value.replace("_", " ")

    @property
    def limit(self) -> Limit | None:
        """The worker's resource limit this outcome is the breach of (out of memory: the
        address-space limit, where the worker has one)."""
        return _LIMIT_OF.get(self)


class Limit(str, enum.Enum):
    """A resource limit of a worker (``setrlimit``; hard, so the candidate cannot raise it)."""

    ADDRESS_SPACE = "RLIMIT_AS"  # the candidate's memory (--memory-limit), plus room for the inputs
    FILE_SIZE = "RLIMIT_FSIZE"  # every file it writes, its captured stdout and stderr included
    CPU_TIME = "RLIMIT_CPU"  # seconds of CPU time (the grader sets none; a candidate may set its own)

    def describe(self) -> str:
        return {Limit.ADDRESS_SPACE: "address-space limit", Limit.FILE_SIZE: "output-file-size limit",
                Limit.CPU_TIME: "CPU-time limit"}[self]


_LIMIT_OF = {Outcome.OUT_OF_MEMORY: Limit.ADDRESS_SPACE, Outcome.FILE_SIZE_LIMIT: Limit.FILE_SIZE,
             Outcome.CPU_TIME_LIMIT: Limit.CPU_TIME}


def call_outcome(*, returncode: int | None = None, error_kind: str | None = None, timed_out: bool = False,
                 exit_requested: bool = False) -> Outcome:
    """The one mapping from a raw call result to an :class:`Outcome`.

    ``timed_out``: no reply in time (wins over everything: we killed it). ``error_kind``: what
    the worker said the candidate raised ("exception", "out_of_memory", "file_size_limit": a write
    refused with EFBIG, "cuda_error"). ``exit_requested``: the worker reported a ``sys.exit``.
    ``returncode``: the worker died without replying, with this exit code (negative: the signal
    that killed it; SIGXFSZ and SIGXCPU are the kernel's, for the file-size and CPU-time limits).
    """
    if timed_out:
        return Outcome.TIMEOUT
    if error_kind is not None:
        return {"exception": Outcome.RAISED, "out_of_memory": Outcome.OUT_OF_MEMORY,
                "file_size_limit": Outcome.FILE_SIZE_LIMIT, "cuda_error": Outcome.CRASHED}[error_kind]
    if exit_requested:
        return Outcome.EXITED
    if returncode is None:
        return Outcome.RETURNED
    if returncode < 0:
        return _SIGNAL_OUTCOMES.get(-returncode, Outcome.CRASHED)
    return Outcome.EXITED


_SIGNAL_OUTCOMES = {signal.SIGXFSZ: Outcome.FILE_SIZE_LIMIT, signal.SIGXCPU: Outcome.CPU_TIME_LIMIT}
"""The signals the kernel sends a process past one of its resource limits."""


def describe_limit(limit: Limit, value: float | None, *, how: str = "") -> str:
    """'the worker exceeded the output-file-size limit of 256 MiB (it wrote to stdout or stderr
    past it)': the limit named with its value (bytes, or seconds of CPU time; None: not known here,
    e.g. a CPU-time limit the candidate set itself) and ``how`` it was met, in parentheses."""
    said = f"the worker exceeded the {limit.describe()}"
    if value is not None:
        said += f" of {value:g} s" if limit is Limit.CPU_TIME else f" of {_bytes(value)}"
    return said + (f" ({how})" if how else "")


def _bytes(value: float) -> str:
    """'256 MiB', '20.5 GiB'."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:g} bytes"


_SIGNAL_HINTS = {
    signal.SIGSEGV: "segmentation fault: an invalid memory access in native code",
    signal.SIGABRT: "abort: a failed assertion or fatal error in native code",
    signal.SIGBUS: "bus error: a misaligned or unmapped memory access",
    signal.SIGFPE: "arithmetic error in native code",
    signal.SIGILL: "illegal instruction",
    signal.SIGKILL: "killed, e.g. by the system's out-of-memory killer",
    signal.SIGXFSZ: "wrote a file (or printed) past the worker's output-file-size limit",
    signal.SIGXCPU: "ran past its CPU-time limit",
}


def describe_exit(returncode: int | None) -> str:
    """'was killed by SIGSEGV (segmentation fault: ...)' or 'exited with code 3 (...)'."""
    if returncode is None:
        return "died (its exit code is unknown)"
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
        except ValueError:
            return f"was killed by signal {-returncode}"
        hint = _SIGNAL_HINTS.get(sig)
        return f"was killed by {sig.name}" + (f" ({hint})" if hint else "")
    return f"exited with code {returncode} (sys.exit, os._exit or exit() in native code)"


class HarnessError(LseFuzzError, RuntimeError):
    """The harness, not the implementation, failed on an example (e.g. the GPU had no room for a
    huge-offset input even after waiting): the run ends without a verdict on the implementation,
    as an internal error. Checks let it through instead of blaming the call it happened in."""


class ImplLost(BaseException):
    """The implementation's worker crashed, exited, hung or ran out of memory: the run stops now.

    ``input`` is the tensor of the call that was lost (unchanged: the worker died before it could
    write anything back); ``call`` its number (1-based). The runner fills in ``reproducer`` (the
    saved example the call was part of) and ``example`` before it lets the exception through.
    """

    def __init__(self, outcome: Outcome, detail: str, *, call: int = 0, input=None,
                 returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(f"{outcome.value}: {detail}")
        self.outcome = outcome
        self.detail = detail
        self.call = call
        self.input = input
        self.returncode = returncode
        self.stderr = stderr
        self.example = None
        self.reproducer = None
        self.replay: str | None = None


# --------------------------------------------------------------------------------------------
# One fuzz run


class Status(str, enum.Enum):
    """How a fuzz run ended."""

    PASSED = "passed"  # every example passed every selected check
    FAILED = "failed"  # a check failed; the failure reproduced on the shrunk example
    ERROR = "error"  # the implementation raised an exception
    FLAKY = "flaky"  # a check failed once but not when the same example ran again (stateful impl?)
    UNSUPPORTED = "unsupported"  # the CPU's emulation cannot run a construct the implementation uses


def run_status(failure: CheckFailure | ImplError | Unsupported | None, *, reproduced: bool = True) -> Status:
    """The one mapping from what a run found to its :class:`Status`."""
    if failure is None:
        return Status.PASSED
    if isinstance(failure, Unsupported):
        return Status.UNSUPPORTED
    if not reproduced:
        return Status.FLAKY
    if isinstance(failure, ImplError):
        return Status.ERROR
    # A check's failure: the row LSE's CheckFailure, or an op's (fuzz.merge.checks.MergeFailure).
    assert isinstance(failure, AssertionError) and failure.check, f"unexpected failure {failure!r}"
    return Status.FAILED


# --------------------------------------------------------------------------------------------
# One candidate


class Verdict(str, enum.Enum):
    """What became of one candidate."""

    PASS = "pass"  # every example passed every check
    FAIL = "fail"  # a check failed (``check`` names it); flaky failures count here too
    ERROR = "error"  # the candidate raised an exception
    CRASH = "crash"  # its worker died: a signal (segfault, abort), sys.exit/os._exit, out of memory, or
    #                  another of its resource limits (output file size, CPU time), which the reason names
    TIMEOUT = "timeout"  # a call hung past its deadlines, or the candidate's time budget ran out
    LOAD_ERROR = "load_error"  # it could not be used: missing file, syntax error, import error, no such
    #                            function, wrong signature, or it crashed or hung while importing
    INTERNAL_ERROR = "internal_error"  # the grader itself failed on this candidate (a bug to report)
    NOT_RUN = "not_run"  # never graded: a mutant whose edit no generated input reaches (mutation analysis only)
    UNSUPPORTED = "unsupported"  # no verdict on this device: the CPU's emulation of Triton cannot run a construct
    #                              it uses (the reason names it); neither a failure nor a pass: run with --device cuda

    @property
    def label(self) -> str:
        """The verdict as a report's first word, one spelling everywhere: PASS, FAIL, ERROR, CRASH, ...
        (``lse-fuzz check`` and ``replay``, :meth:`fuzz.result.CheckResult.summary`, hence the pytest
        plugin's messages)."""
        return self.value.upper()


def verdict_of(*, status: Status | str | None = None, outcome: Outcome | str | None = None,
               loaded: bool = True) -> Verdict:
    """The one mapping from a raw result to a verdict.

    ``loaded``: whether the target loaded in its worker. ``outcome``: the :class:`Outcome` of a
    lost worker (crash, exit, out of memory or another resource limit: crash; timeout: timeout).
    ``status``: the :class:`Status` of a fuzz run that finished.
    """
    if not loaded:
        return Verdict.LOAD_ERROR
    if outcome is not None:
        outcome = Outcome(outcome)
        if outcome is Outcome.TIMEOUT:
            return Verdict.TIMEOUT
        if outcome.fatal:
            return Verdict.CRASH
        return Verdict.ERROR if outcome is Outcome.RAISED else Verdict.PASS
    return {Status.PASSED: Verdict.PASS, Status.FAILED: Verdict.FAIL, Status.FLAKY: Verdict.FAIL,
            Status.ERROR: Verdict.ERROR, Status.UNSUPPORTED: Verdict.UNSUPPORTED}[Status(status)]


CHECK_EXIT_CODES: dict[Verdict, ExitCode] = {
    Verdict.PASS: ExitCode.OK, Verdict.FAIL: ExitCode.FAILED, Verdict.ERROR: ExitCode.FAILED,
    Verdict.CRASH: ExitCode.FAILED, Verdict.TIMEOUT: ExitCode.FAILED, Verdict.LOAD_ERROR: ExitCode.USAGE,
    Verdict.INTERNAL_ERROR: ExitCode.INTERNAL, Verdict.NOT_RUN: ExitCode.INTERNAL,  # check always runs its target
    Verdict.UNSUPPORTED: ExitCode.UNSUPPORTED,
}
"""Exit code of ``lse-fuzz check`` for each verdict."""


def batch_exit_code(verdicts: Iterable[Verdict | str]) -> ExitCode:
    """Exit code of ``lse-fuzz grade`` for its candidates' verdicts: FAILED when one neither passed
    nor was unsupported; else UNSUPPORTED when one was (the CPU could not judge it: never counted
    against it); else OK (every one passed, or there were none)."""
    found = {Verdict(verdict) for verdict in verdicts}
    if found - {Verdict.PASS, Verdict.UNSUPPORTED}:
        return ExitCode.FAILED
    return ExitCode.UNSUPPORTED if Verdict.UNSUPPORTED in found else ExitCode.OK


# --------------------------------------------------------------------------------------------
# One mutant


class MutantStatus(str, enum.Enum):
    """What became of a mutant; the values are the Stryker report's status names."""

    KILLED = "Killed"  # a check failed on it
    SURVIVED = "Survived"  # every example passed every check
    TIMEOUT = "Timeout"  # it ran past its time limit and was stopped
    RUNTIME_ERROR = "RuntimeError"  # it crashed: signal, CUDA error, an exception from the kernel or launcher
    COMPILE_ERROR = "CompileError"  # the kernel does not compile (Triton CompilationError, or the interpreter's)
    NO_COVERAGE = "NoCoverage"  # the mutated code never ran on any generated input (lse-fuzz mutate; not run)
    IGNORED = "Ignored"  # not judged: the CPU cannot run a construct its kernel uses (verdict unsupported;
    #                      the reason names it); neither killed nor survived, and not in the score

    @property
    def detected(self) -> bool:
        return self in (MutantStatus.KILLED, MutantStatus.TIMEOUT)

    @property
    def valid(self) -> bool:
        """Counted in the score: the mutant ran to a verdict."""
        return self not in (MutantStatus.RUNTIME_ERROR, MutantStatus.COMPILE_ERROR, MutantStatus.IGNORED)


_COMPILE_ERROR_TYPES = (
    "triton.compiler.errors.CompilationError",  # compiled mode: the kernel failed to compile
    "builtins.SyntaxError",  # the kernel's file does not even parse
)
_INTERPRETER_ERROR = "triton.runtime.errors.InterpreterError"
_PASS_MANAGER_FAILED = "PassManager::run failed"
_DEVICE_ASSERT = "builtins.AssertionError"


def is_compile_error(chain: Sequence[dict]) -> bool:
    """Whether an exception chain (outermost first, each with the qualified names of its MRO; see
    :func:`fuzz.failures.exception_chain`) is a compilation error.

    In Triton's interpreter nothing is compiled: a kernel body is executed as Python, and an
    exception raised inside it arrives as an InterpreterError. Those are the errors the compiler
    reports at compile time (an undefined ``tl`` function, a shape or dtype mismatch), with one
    exception: a failed ``tl.device_assert``, an AssertionError, is a runtime error on a GPU too.
    """
    names = [set(entry.get("mro", [])) | {entry.get("type", "")} for entry in chain]
    if any(name in types for types in names for name in _COMPILE_ERROR_TYPES):
        return True
    # A crash inside Triton's MLIR pipeline (a compiler bug the kernel tripped, seen on Triton 3.6)
    # surfaces as a plain RuntimeError: it is still the kernel failing to compile.
    if any(_PASS_MANAGER_FAILED in str(entry.get("message", "")) for entry in chain):
        return True
    interpreted = any(_INTERPRETER_ERROR in types for types in names)
    return interpreted and not any(_DEVICE_ASSERT in types for types in names)


def mutant_status(verdict: Verdict | str, chain: Sequence[dict] = ()) -> MutantStatus:
    """The one mapping from a mutant's verdict (it is graded like any candidate) to its status.

    fail -> Killed (flaky failures included: a failure that did not reproduce is still one);
    pass -> Survived; timeout -> Timeout; not_run -> NoCoverage; unsupported -> Ignored (the CPU could not run
    it: no verdict either way); crash -> RuntimeError; error and load_error ->
    CompileError when ``chain`` (the exception's) is a compilation error, else RuntimeError;
    internal_error (the harness failed on it) -> RuntimeError.
    """
    verdict = Verdict(verdict)
    if verdict is Verdict.FAIL:
        return MutantStatus.KILLED
    if verdict is Verdict.PASS:
        return MutantStatus.SURVIVED
    if verdict is Verdict.TIMEOUT:
        return MutantStatus.TIMEOUT
    if verdict is Verdict.NOT_RUN:
        return MutantStatus.NO_COVERAGE
    if verdict is Verdict.UNSUPPORTED:
        return MutantStatus.IGNORED
    if verdict in (Verdict.ERROR, Verdict.LOAD_ERROR) and is_compile_error(chain):
        return MutantStatus.COMPILE_ERROR
    return MutantStatus.RUNTIME_ERROR
