"""Run the implementation under test in a separate worker process, so its failures stay there.

    with IsolatedImpl("path/to/kernel.py:lse", device="cpu", call_timeout=60) as impl:
        result = fuzz.check(impl, budget=200, target=impl.target)   # the runner stays here

The fuzz runner (Hypothesis, the float64 oracle, every check) runs in this process; only the
candidate runs in the worker. ``IsolatedImpl`` is a callable proxy: each call ships the input
(its storage bytes, size, strides, storage offset and dtype) to the worker, which rebuilds the
same strided view, calls the candidate, and sends back the output and, if the call changed
them, the input's bytes, which are written back here so ``input_unchanged`` sees the mutation.
The worker allocates nothing the runner compares against, and the reference is never asked for
an answer there.

Against answers that do not come from computing: the same tensor object here maps to the same
object in the worker (so new values written into a reused input, as the ``fresh_values`` check
does, meet whatever the candidate cached by object, pointer or shape); every output the
candidate returns and every input storage the worker drops is filled with NaN bits before its
memory can be reused (a row the kernel never writes cannot inherit a right answer from the
previous call); and the input's bytes are compared after every call, not only the calls the
checks inspect (:attr:`IsolatedImpl.input_changes`).

What a call can end in (:class:`Outcome`, one tested mapping in :func:`classify`):

* it returned: any object comes back (a tensor with its dtype, shape and device; anything else
  as a stand-in with the same type name), and the checks judge it;
* it raised: :class:`CandidateRaised` (an ``Exception``) carries the worker's traceback, and the
  runner reports it as the implementation's error; the worker lives on;
* the worker died (segfault, abort, ``sys.exit``, ``os._exit``), hung past ``call_timeout``,
  or ran out of memory: :class:`WorkerLost`. It derives from ``BaseException``, not
  ``Exception``, on purpose: neither the runner nor Hypothesis catches it, so the run stops at
  once instead of shrinking (every shrinking step would restart a worker and wait for a timeout).

What the isolation is: a separate process in its own session (the terminal's Ctrl-C does not
reach it; it is killed with its process group), with a scrubbed environment (see
:func:`worker_environment`), its own temporary working directory, stdin from /dev/null,
stdout and stderr captured to files (reported as noise, never mixed into this process's output),
core dumps off, an address-space limit on the CPU (``memory_limit``), a file-size limit, and a
kill when this process or the zygote dies. Workers are forked from a zygote that has torch and
triton imported already (never CUDA: each worker initialises its own), so each starts in a
fraction of a second. Linux only (fork, SCM_RIGHTS descriptor passing, PR_SET_PDEATHSIG).

What it is not: a security sandbox. The candidate runs with your user's rights: it can read and
write your files, open network connections, and find this process. Isolation protects the fuzz
run from accidents (crashes, hangs, leaks, stray output, corrupted interpreter state), not the
machine from hostile code; run untrusted batches in a container or a VM.
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from reference.errors import InvalidArgument

from . import isolation_worker as wire

__all__ = [
    "CandidateRaised",
    "IsolatedImpl",
    "LoadFailed",
    "Noise",
    "Outcome",
    "RestartingImpl",
    "WorkerLost",
    "classify",
    "describe_exit",
    "load_input",
    "resolve_target",
    "save_input",
    "worker_environment",
]

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds one call may take, Triton compilation of a new specialisation included."""

DEFAULT_LOAD_TIMEOUT = 120.0
WHOLE_STORAGE_LIMIT = 1 << 28
"""Inputs whose storage is at most this many bytes travel whole (padding included, so writes
into the padding are seen); larger ones (huge offsets) travel as the view's elements only."""

MAX_FRAME = 1 << 34
"""Largest frame accepted from a worker (an output or the input's storage)."""

FILE_SIZE_LIMIT = 256 << 20
"""RLIMIT_FSIZE of a worker: a candidate printing in a loop cannot fill the disk."""

_ENV_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "CC", "CXX",
             "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_ENV_KEEP_PREFIXES = ("TRITON_", "CUDA_", "NVIDIA_", "LC_", "ROCR_", "HIP_")


class Outcome(str, enum.Enum):
    """How one call of the candidate ended."""

    RETURNED = "returned"  # it returned something; the checks judge what
    RAISED = "raised"  # it raised an exception; the worker lives on
    CRASHED = "crashed"  # the worker was killed by a signal (segfault, abort) or a CUDA error
    EXITED = "exited"  # the worker exited: sys.exit, os._exit, exit() in native code
    OUT_OF_MEMORY = "out_of_memory"  # an allocation failed (memory limit, GPU memory)
    TIMED_OUT = "timed_out"  # no answer within the time limit: killed

    @property
    def fatal(self) -> bool:
        """The worker is gone (or unusable): the run stops."""
        return self not in (Outcome.RETURNED, Outcome.RAISED)


def classify(*, returncode: int | None = None, error_kind: str | None = None, timed_out: bool = False,
             exit_requested: bool = False) -> Outcome:
    """The one mapping from a raw outcome to an :class:`Outcome`.

    ``timed_out``: no reply in time (wins over everything: we killed it). ``error_kind``: what
    the worker said the candidate raised ("exception", "out_of_memory", "cuda_error").
    ``exit_requested``: the worker reported a ``sys.exit``. ``returncode``: the worker died
    without replying, with this exit code (negative: the signal that killed it).
    """
    if timed_out:
        return Outcome.TIMED_OUT
    if error_kind is not None:
        return {"exception": Outcome.RAISED, "out_of_memory": Outcome.OUT_OF_MEMORY,
                "cuda_error": Outcome.CRASHED}[error_kind]
    if exit_requested:
        return Outcome.EXITED
    if returncode is None:
        return Outcome.RETURNED
    if returncode < 0:
        return Outcome.CRASHED
    return Outcome.EXITED


_SIGNAL_HINTS = {
    signal.SIGSEGV: "segmentation fault: an invalid memory access in native code",
    signal.SIGABRT: "abort: a failed assertion or fatal error in native code",
    signal.SIGBUS: "bus error: a misaligned or unmapped memory access",
    signal.SIGFPE: "arithmetic error in native code",
    signal.SIGILL: "illegal instruction",
    signal.SIGKILL: "killed, e.g. by the system's out-of-memory killer",
    signal.SIGXFSZ: f"wrote a file (or printed) past the {FILE_SIZE_LIMIT >> 20} MiB limit",
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


class LoadFailed(InvalidArgument):
    """The target could not be loaded in the worker (import error, missing function, signature)."""


class WorkerLost(BaseException):
    """The worker crashed, exited, hung or ran out of memory: the run must stop now.

    A ``BaseException`` so that the runner's ``except Exception`` and Hypothesis let it through
    instead of shrinking. ``input`` is the tensor of the call that was lost (unchanged: the
    worker died before it could write anything back); ``call`` its number (1-based).
    """

    def __init__(self, outcome: Outcome, detail: str, *, call: int = 0, input: torch.Tensor | None = None,
                 returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(f"{outcome.value}: {detail}")
        self.outcome = outcome
        self.detail = detail
        self.call = call
        self.input = input
        self.returncode = returncode
        self.stderr = stderr


class CandidateRaised(Exception):
    """The candidate raised in the worker. Subclasses carry the original exception's name, so
    reports say ``ZeroDivisionError``; the worker's traceback is attached as a note."""

    remote_type = "Exception"

    def __init__(self, message: str, traceback_text: str = "") -> None:
        super().__init__(message)
        self.traceback_text = traceback_text
        if traceback_text and hasattr(self, "add_note"):  # Python 3.11+
            self.add_note("traceback in the isolated worker:\n" + traceback_text.rstrip())


_RAISED_CLASSES: dict[str, type[CandidateRaised]] = {}


def _raised_class(name: str) -> type[CandidateRaised]:
    if not name.isidentifier():
        name = "Exception"
    if name not in _RAISED_CLASSES:
        _RAISED_CLASSES[name] = type(name, (CandidateRaised,), {"remote_type": name, "__module__": "candidate"})
    return _RAISED_CLASSES[name]


class ReturnedObject:
    """Stands in for a non-tensor the candidate returned; subclasses carry its type's name."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name, self.text = type_name, text

    def __repr__(self) -> str:
        return self.text


def _returned_object(type_name: str, text: str) -> ReturnedObject:
    name = type_name if type_name.replace("(", "").replace(")", "").replace("=", "").replace(".", "").isidentifier() \
        else "object"
    return type(name, (ReturnedObject,), {"__module__": "candidate"})(type_name, text)


@dataclass(frozen=True)
class Noise:
    """What the worker printed: byte counts and the first lines of each stream."""

    stdout_bytes: int
    stderr_bytes: int
    stdout_head: str
    stderr_head: str

    @property
    def any(self) -> bool:
        return bool(self.stdout_bytes or self.stderr_bytes)

    def describe(self) -> str:
        parts = []
        for name, size, head in (("stdout", self.stdout_bytes, self.stdout_head),
                                 ("stderr", self.stderr_bytes, self.stderr_head)):
            if size:
                first = head.strip().splitlines()[0][:120] if head.strip() else ""
                parts.append(f"{size} bytes to {name}" + (f" (first line: {first!r})" if first else ""))
        return "; ".join(parts) if parts else "nothing"

    def to_dict(self) -> dict[str, object]:
        return {"stdout_bytes": self.stdout_bytes, "stderr_bytes": self.stderr_bytes,
                "stdout_head": self.stdout_head, "stderr_head": self.stderr_head}


# --------------------------------------------------------------------------------------------
# Targets

DEFAULT_FUNCTION = "lse"


def resolve_target(target: str, *, function: str = DEFAULT_FUNCTION) -> str:
    """``target`` with the function made explicit (default ``lse``) and a file path made absolute.

    Checked here without running anything: the file exists and parses. Whether the module
    imports and has the function is for the worker to find out (importing runs the candidate).
    """
    if not isinstance(target, str) or not target.strip():
        raise InvalidArgument(f"target={target!r}; expected 'path/to/file.py[:func]' or 'pkg.module[:func]'.")
    location, _, name = target.rpartition(":")
    if not location:
        location, name = target, function
    if not name.replace(".", "_").isidentifier():
        raise InvalidArgument(f"target={target!r}: {name!r} is not a function name.")
    if location.endswith(".py") or "/" in location or os.sep in location:
        path = Path(location).expanduser().resolve()
        if not path.exists():
            raise InvalidArgument(f"target={target!r}: no such file {str(path)!r}.")
        if not path.is_file():
            raise InvalidArgument(f"target={target!r}: {str(path)!r} is a directory, not a .py file.")
        check_syntax(path, target)
        return f"{path}:{name}"
    if not all(part.isidentifier() for part in location.split(".")):
        raise InvalidArgument(f"target={target!r}: {location!r} is neither a .py file nor a dotted module name.")
    return f"{location}:{name}"


def check_syntax(path: Path, target: str) -> None:
    """InvalidArgument naming the line if ``path`` does not parse (nothing is executed)."""
    import ast

    try:
        source = path.read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"target={target!r}: cannot read {str(path)!r} ({exc.strerror}).") from None
    try:
        ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InvalidArgument(
            f"target={target!r}: {path.name}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}."
        ) from None
    except ValueError as exc:  # null bytes
        raise InvalidArgument(f"target={target!r}: {path.name} is not Python source ({exc}).") from None


# --------------------------------------------------------------------------------------------
# The environment a worker sees


def project_root() -> str:
    """The directory holding the ``fuzz`` and ``reference`` packages."""
    return str(Path(__file__).resolve().parent.parent)


def worker_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The scrubbed environment of a worker: what running Python, torch, triton and CUDA needs.

    Kept: PATH, HOME, USER, locale, LD_LIBRARY_PATH, CC/CXX (Triton builds a launcher stub on
    GPUs), thread counts, and every TRITON_*, CUDA_*, NVIDIA_* variable. Dropped: everything
    else (tokens, proxies, cloud credentials, CI variables). PYTHONPATH is rebuilt so the
    project and the caller's import path resolve; PYTHONHASHSEED is fixed.
    """
    environ = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in environ.items() if k in _ENV_KEEP or k.startswith(_ENV_KEEP_PREFIXES)}
    env.setdefault("PATH", os.defpath)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(worker_sys_path(environ))
    return env


def worker_sys_path(environ: dict[str, str] | None = None) -> list[str]:
    """Import path entries a worker adds: the project, then this process's own entries.

    Module targets (``pkg.module:func``) then resolve in the worker as they would here.
    """
    environ = os.environ if environ is None else environ
    entries = [project_root()]
    entries += [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    entries += [os.getcwd() if p in ("", ".") else p for p in sys.path]
    seen, result = set(), []
    for entry in entries:
        entry = os.path.abspath(entry)
        if entry not in seen and os.path.exists(entry):
            seen.add(entry)
            result.append(entry)
    return result


def default_memory_limit(device: str, *, jobs: int = 1, huge_offsets: bool = False) -> int | None:
    """Address-space limit (bytes) of a CPU worker: the machine's memory shared among ``jobs``
    workers, at least 4 GiB, plus room for the lazily allocated storage of huge-offset inputs.
    None on a GPU: CUDA reserves large address ranges and breaks under RLIMIT_AS."""
    if not device.startswith("cpu"):
        return None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 16 << 30
    limit = max(4 << 30, total // max(1, jobs))
    return limit + (48 << 30 if huge_offsets else 0)


# --------------------------------------------------------------------------------------------
# The zygote (fork server), parent side

_BOOT = ("import importlib.util,sys;"
         "s=importlib.util.spec_from_file_location('_lse_fuzz_zygote',sys.argv[1]);"
         "m=importlib.util.module_from_spec(s);sys.modules[s.name]=m;s.loader.exec_module(m);"
         "m.zygote_main(int(sys.argv[2]))")


class Zygote:
    """A connection to a fork server; owns it when this process started it."""

    def __init__(self, sock: socket.socket, *, process: subprocess.Popen | None = None,
                 address: str | None = None, log: Path | None = None) -> None:
        self.sock = sock
        self.process = process
        self.address = address
        self.log = log
        self._exits: dict[int, int] = {}
        self._replies: list[dict] = []

    @classmethod
    def start(cls, env: dict[str, str], *, timeout: float = DEFAULT_LOAD_TIMEOUT) -> Zygote:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        home = Path(tempfile.mkdtemp(prefix="lse-fuzz-zygote-home-"))
        log = home / "zygote.log"
        with open(log, "wb") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, wire.__file__, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), env=env, cwd=home, stdin=subprocess.DEVNULL,
                stdout=log_file, stderr=log_file, start_new_session=True,
            )
        theirs.close()
        zygote = cls(ours, process=process, log=log)
        try:
            hello = zygote._read(timeout)
        except EOFError:
            hello = None
        if hello is None or hello.get("op") != "hello":
            process.kill()
            text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"the worker fork server did not start: {text}")
        zygote.address = hello["address"]
        return zygote

    @classmethod
    def connect(cls, address: str) -> Zygote:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect(address)
        return cls(sock, address=address)

    def alive(self) -> bool:
        return self.process is None or self.process.poll() is None

    def _read(self, timeout: float | None) -> dict | None:
        """One message from the zygote (exit notices filed away); None on timeout.

        EOFError when the zygote is gone.
        """
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 16)
        except socket.timeout:
            return None
        except OSError:
            data = b""
        finally:
            self.sock.settimeout(None)
        if not data:
            raise EOFError("the worker fork server is gone")
        message = json.loads(data)
        if message.get("op") == "exited":
            self._exits[message["pid"]] = message["code"]
        return message

    def spawn(self, config: dict, fds: tuple[int, int, int], *, timeout: float = 60.0) -> int:
        message = json.dumps(config).encode()
        if len(message) > wire.MAX_SPAWN_MESSAGE:
            raise RuntimeError(f"a worker's configuration is {len(message)} bytes, more than "
                               f"{wire.MAX_SPAWN_MESSAGE}: is the environment unusually large?")
        socket.send_fds(self.sock, [message], list(fds))
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._read(max(0.0, deadline - time.monotonic()))
            except EOFError:
                message = None
            if message is None:
                raise RuntimeError("the worker fork server did not answer a spawn request")
            if message.get("op") == "spawned":
                return int(message["pid"])
            if message.get("op") == "error":
                raise RuntimeError(f"the worker fork server refused: {message['message']}")

    def wait_exit(self, pid: int, timeout: float = 5.0) -> int | None:
        """The exit code of ``pid`` (negative for a signal) once the zygote has reaped it; None
        if that takes longer than ``timeout`` or the zygote is gone."""
        deadline = time.monotonic() + timeout
        while pid not in self._exits:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                self._read(left)
            except EOFError:
                return None
        return self._exits.pop(pid)

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            if self.process is not None:
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                if self.log is not None:
                    shutil.rmtree(self.log.parent, ignore_errors=True)


_ZYGOTES: dict[str, Zygote] = {}
ZYGOTE_ADDRESS_ENV = "LSE_FUZZ_ZYGOTE"
"""Set in grading drivers: the address of their parent's zygote, which they share."""


def zygote_for(env: dict[str, str]) -> Zygote:
    """This process's zygote for ``env`` (started on first use); a grading driver connects to
    its parent's zygote instead (its address is in LSE_FUZZ_ZYGOTE)."""
    address = os.environ.get(ZYGOTE_ADDRESS_ENV)
    key = address or json.dumps(sorted(env.items()))
    zygote = _ZYGOTES.get(key)
    if zygote is None or not zygote.alive():
        zygote = Zygote.connect(address) if address else Zygote.start(env)
        _ZYGOTES[key] = zygote
    return zygote


@atexit.register
def _close_zygotes() -> None:
    for zygote in _ZYGOTES.values():
        try:
            zygote.close()
        except Exception:
            pass
    _ZYGOTES.clear()


# --------------------------------------------------------------------------------------------
# The proxy


class IsolatedImpl:
    """A callable ``x -> object`` that runs ``target`` in a worker process.

    ``target`` is a TARGET string (``path/to/file.py:func`` or ``pkg.module:func``). The worker
    starts on :meth:`start` (or the first call) and serves every call of this object, so its
    imports and Triton compilations are paid once. ``call_timeout`` bounds each call;
    ``timeout`` (optional) bounds the whole life of the worker from :meth:`start` (a candidate's
    time budget). ``memory_limit`` (bytes) is the worker's address-space limit on the CPU
    (default :func:`default_memory_limit`; 0 for none). ``threads``: torch intra-op threads of
    the worker (default 1 on the CPU).
    """

    def __init__(self, target: str, *, device: str | torch.device = "cpu", call_timeout: float = DEFAULT_CALL_TIMEOUT,
                 load_timeout: float = DEFAULT_LOAD_TIMEOUT, timeout: float | None = None,
                 memory_limit: int | None = None, threads: int | None = None,
                 environ: dict[str, str] | None = None) -> None:
        self.target = resolve_target(target)
        self.device = str(torch.device(device))
        for name, value in (("call_timeout", call_timeout), ("load_timeout", load_timeout), ("timeout", timeout)):
            if value is not None and not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
                raise InvalidArgument(f"{name}={value!r}; expected a number of seconds > 0.")
        self.call_timeout = float(call_timeout)
        self.load_timeout = float(load_timeout)
        self.timeout = timeout
        self.memory_limit = default_memory_limit(self.device) if memory_limit is None else memory_limit
        if not self.device.startswith("cpu"):
            self.memory_limit = 0  # CUDA reserves huge address ranges: RLIMIT_AS would break it
        # One intra-op thread on the CPU by default: interpreted kernels are single-threaded numpy,
        # and two processes with OpenMP pools on a few cores mostly spin against each other.
        self.threads = threads if threads is not None else (1 if self.device.startswith("cpu") else None)
        self.environ = environ
        self.guard = None  # optional: a context manager factory each call runs inside (a GPU lock)
        self.calls = 0
        self.input_changes = 0  # calls after which the input's bytes differed from what was sent
        self.candidate_seconds = 0.0
        self.load_seconds = 0.0
        self.lost: WorkerLost | None = None
        self.pid: int | None = None
        self._conn: Connection | None = None
        self._zygote: Zygote | None = None
        self._home: Path | None = None
        self._deadline: float | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> IsolatedImpl:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"IsolatedImpl({self.target!r}, device={self.device!r})"

    def start(self) -> IsolatedImpl:
        """Start the worker and load the target; LoadFailed (an InvalidArgument) if it cannot."""
        if self._conn is not None:
            return self
        env = worker_environment(self.environ)
        self._zygote = zygote_for(env)
        self._home = Path(tempfile.mkdtemp(prefix="lse-fuzz-worker-"))
        cwd = self._home / "cwd"
        cwd.mkdir()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        stdout = open(self._home / "stdout", "wb")
        stderr = open(self._home / "stderr", "wb")
        rlimits = {"RLIMIT_FSIZE": FILE_SIZE_LIMIT}
        if self.memory_limit:
            rlimits["RLIMIT_AS"] = int(self.memory_limit)
        child_env = dict(env, TMPDIR=str(cwd), TEMP=str(cwd), TMP=str(cwd))
        config = {
            "entry": "worker", "cwd": str(cwd), "env": child_env, "rlimits": rlimits,
            "sys_path": worker_sys_path(self.environ),
            "args": {"target": self.target, "device": self.device, "threads": self.threads},
        }
        try:
            self.pid = self._zygote.spawn(config, (theirs.fileno(), stdout.fileno(), stderr.fileno()))
        finally:
            theirs.close()
            stdout.close()
            stderr.close()
        self._conn = Connection(ours.detach())
        started = time.monotonic()
        if self.timeout is not None:
            self._deadline = started + self.timeout
        reply = self._receive(min(self.load_timeout, self._time_left()), what="loading the target")
        self.load_seconds = time.monotonic() - started
        if reply[0]["op"] == "load_failed":
            message = reply[0]["message"]
            self.close()
            if not message.startswith("target="):
                message = f"target={self.target!r}: {message}"
            raise LoadFailed(message)
        return self

    def close(self) -> None:
        """Stop the worker (kill its process group) and remove its temporary directory."""
        if self._conn is not None:
            try:
                wire.send_message(self._conn, {"op": "close"})
            except OSError:
                pass
            self._conn.close()
            self._conn = None
            if self.lost is None:
                self._kill()
                self._zygote.wait_exit(self.pid, timeout=2.0)
        if self._home is not None:
            self._final_noise = self.noise()
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def _kill(self) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _time_left(self) -> float:
        if self._deadline is None:
            return math.inf
        return self._deadline - time.monotonic()

    # -- noise --------------------------------------------------------------------------------

    def noise(self) -> Noise:
        """What the worker has printed so far (also after :meth:`close`)."""
        if self._home is None:
            return getattr(self, "_final_noise", Noise(0, 0, "", ""))
        sizes, heads = [], []
        for name in ("stdout", "stderr"):
            path = self._home / name
            try:
                sizes.append(path.stat().st_size)
                with open(path, "rb") as f:
                    heads.append(f.read(2000).decode(errors="replace"))
            except OSError:
                sizes.append(0)
                heads.append("")
        return Noise(sizes[0], sizes[1], heads[0], heads[1])

    def stderr_tail(self, limit: int = 4000) -> str:
        if self._home is None:
            return ""
        try:
            with open(self._home / "stderr", "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    # -- calls --------------------------------------------------------------------------------

    def _lose(self, outcome: Outcome, detail: str, *, returncode: int | None = None,
              x: torch.Tensor | None = None, reaped: bool = False) -> WorkerLost:
        """Kill what is left of the worker (its process group), wait until it is gone, and record
        why it was lost."""
        self._kill()
        if not reaped and self._zygote is not None and self.pid is not None:
            self._zygote.wait_exit(self.pid, timeout=5.0)
        self.lost = WorkerLost(outcome, detail, call=self.calls, input=x, returncode=returncode,
                               stderr=self.stderr_tail())
        return self.lost

    def _receive(self, timeout: float, *, what: str, x: torch.Tensor | None = None):
        """The worker's next reply; WorkerLost if it dies or does not answer within ``timeout``."""
        assert self._conn is not None
        if timeout <= 0 or not self._conn.poll(timeout):
            budget = self.timeout is not None and self._time_left() <= 0
            detail = (f"the candidate's time budget of {self.timeout:g} s ran out while {what}" if budget
                      else f"no answer within {timeout:g} s while {what} (a hang, or far too slow)")
            raise self._lose(classify(timed_out=True), detail, x=x)
        try:
            return wire.recv_message(self._conn, max_frame=MAX_FRAME)
        except (EOFError, OSError, ValueError):
            code = self._zygote.wait_exit(self.pid) if self._zygote is not None else None
            outcome = classify(returncode=code if code is not None else -signal.SIGKILL)
            raise self._lose(outcome, f"the worker {describe_exit(code)} while {what}", returncode=code, x=x,
                             reaped=code is not None) from None

    def _ensure_ready(self) -> None:
        if self.lost is not None:
            raise self.lost
        if self._conn is None:
            self.start()

    def __call__(self, x: torch.Tensor) -> object:
        self._ensure_ready()
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"IsolatedImpl takes a tensor, got {type(x).__name__}")
        spec, frame = encode_input(x)
        self.calls += 1
        what = f"call {self.calls} on a {tuple(x.shape)} {wire.dtype_name(x.dtype)} input"
        with self.guard() if self.guard is not None else contextlib.nullcontext():
            try:
                wire.send_message(self._conn, {"op": "call", "input": spec}, (frame,))
            except OSError:
                pass  # the worker is gone; _receive reports how
            header, frames = self._receive(min(self.call_timeout, self._time_left()), what=what, x=x)
        op = header.get("op")
        if op == "returned":
            self.candidate_seconds += float(header.get("seconds", 0.0))
            if header.get("input_changed"):
                self.input_changes += 1
                write_back(x, spec, frames[-1])
            return decode_output(header["output"], frames, x)
        if op == "raised":
            self.candidate_seconds += float(header.get("seconds", 0.0))
            outcome = classify(error_kind=header.get("kind", "exception"))
            message = f"{header.get('type', 'Exception')}: {header.get('message', '')}"
            if header.get("during"):
                message += f" (while {header['during']})"
            if outcome.fatal:
                raise self._lose(outcome, f"{message} during {what}", x=x)
            raise _raised_class(header.get("type", "Exception"))(header.get("message", ""), header.get("traceback", ""))
        if op == "exit":
            code = self._zygote.wait_exit(self.pid)
            raise self._lose(classify(exit_requested=True), f"{header.get('detail')} during {what}",
                             returncode=code if code is not None else header.get("code"), x=x,
                             reaped=code is not None)
        raise self._lose(Outcome.CRASHED, f"the worker sent an unexpected {op!r} message during {what}", x=x)

    # -- benchmark ----------------------------------------------------------------------------

    def bench(self, *, shape: tuple[int, int], dtype: torch.dtype, seed: int, min_seconds: float = 0.2,
              repeats: int = 5) -> tuple[float, object]:
        """Seconds per call on a seeded ``randn`` input generated in the worker, and the output.

        Timed here, around whole requests of n calls between two device synchronisations (so
        work on side streams counts, and the candidate's process cannot fake the clock), minus
        the round trip of an empty request; the best of ``repeats``.
        """
        self._ensure_ready()
        wire.send_message(self._conn, {"op": "bench_prepare", "shape": list(shape), "dtype": wire.dtype_name(dtype),
                                       "seed": seed, "warmup": 3})
        self._bench_reply(self.call_timeout * 4, "the benchmark warm-up")
        overhead = min(self._bench_round(0)[0] for _ in range(3))
        iters = 1
        while True:
            seconds, out = self._bench_round(iters)
            if seconds >= min_seconds or iters >= 1 << 16:
                break
            iters *= max(2, min(16, int(min_seconds / max(seconds, 1e-6))))
        best = min([seconds] + [self._bench_round(iters)[0] for _ in range(repeats - 1)])
        return max(best - overhead, 1e-9) / iters, out

    def _bench_round(self, iters: int) -> tuple[float, object]:
        started = time.perf_counter()
        wire.send_message(self._conn, {"op": "bench_run", "iters": iters})
        header, frames = self._bench_reply(self.call_timeout * max(1, iters), "the benchmark")
        seconds = time.perf_counter() - started
        output = header.get("output") or {}
        out = decode_output(output, frames, None) if output.get("kind") == "tensor" else None
        return seconds, out

    def _bench_reply(self, timeout: float, what: str):
        header, frames = self._receive(min(timeout, self._time_left()), what=what)
        if header.get("op") == "raised":
            outcome = classify(error_kind=header.get("kind", "exception"))
            message = f"{header.get('type')}: {header.get('message')} (while {what})"
            if outcome.fatal:
                raise self._lose(outcome, message)
            raise _raised_class(header.get("type", "Exception"))(header.get("message", ""), header.get("traceback", ""))
        if header.get("op") == "exit":
            raise self._lose(Outcome.EXITED, f"{header.get('detail')} during {what}")
        return header, frames


# --------------------------------------------------------------------------------------------
# Tensors across the process boundary


def encode_input(x: torch.Tensor) -> tuple[dict, memoryview]:
    """The description and bytes that let a worker rebuild ``x`` exactly."""
    storage = x.untyped_storage()
    nbytes = storage.nbytes()
    spec = {
        "dtype": wire.dtype_name(x.dtype),
        "size": list(x.shape),
        "stride": list(x.stride()),
        "storage_offset": x.storage_offset(),
        # The same tensor object with the same storage maps to the same object in the worker.
        "key": [id(x), storage.data_ptr(), nbytes, list(x.shape), list(x.stride()), x.storage_offset(),
                wire.dtype_name(x.dtype)],
    }
    if nbytes <= WHOLE_STORAGE_LIMIT:
        spec["mode"] = "storage"
        frame = wire.tensor_bytes(wire.storage_bytes(x))
    else:
        spec["mode"] = "view"
        spec["storage_elements"] = nbytes // x.element_size()
        frame = wire.tensor_bytes(wire.bits(x))
    return spec, frame


def write_back(x: torch.Tensor, spec: dict, frame: bytearray) -> None:
    """Copy the worker's post-call bytes of the input into ``x`` (bit for bit)."""
    raw = torch.frombuffer(frame, dtype=torch.uint8) if len(frame) else torch.empty(0, dtype=torch.uint8)
    if spec["mode"] == "storage":
        wire.storage_bytes(x).copy_(raw.to(x.device))
    else:
        target = wire.bits(x)
        target.copy_(raw.view(target.dtype).reshape(x.shape).to(x.device))


def _device_here(name: str) -> torch.device:
    device = torch.device(name)
    if device.type == "cpu" or (device.type == "cuda" and torch.cuda.is_available()):
        return device
    return torch.device("meta")


def decode_output(output: dict, frames: list[bytearray], x: torch.Tensor | None) -> object:
    """Rebuild what the candidate returned: a tensor (same dtype, shape, device), a view of
    ``x`` when it returned one, or a stand-in object with its type's name."""
    kind = output.get("kind")
    if kind == "object":
        return _returned_object(output.get("type", "object"), output.get("repr", ""))
    dtype = wire.dtype_from_name(output["dtype"])
    size = tuple(output["size"])
    if kind == "alias" and x is not None:
        return torch.empty(0, dtype=dtype, device=x.device).set_(
            x.untyped_storage(), int(output["storage_offset"]), size, tuple(output["stride"]))
    device = _device_here(output.get("device", "cpu"))
    if device.type == "meta" or not frames:
        return torch.empty(size, dtype=dtype, device="meta")
    return wire.tensor_from_bytes(frames[0], dtype, size, device)


# --------------------------------------------------------------------------------------------
# Saved inputs: the input of a lost call, replayable with `lse-fuzz check TARGET --replay FILE`

INPUT_FORMAT = "lse-fuzz-input/1"


def save_input(directory: Path | str, x: torch.Tensor, *, target: str, outcome: str, detail: str) -> Path:
    """Save ``x`` (values and exact geometry) so the lost call can be replayed in a worker."""
    import hashlib

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    values = x.detach().cpu().contiguous()
    payload = {
        "format": INPUT_FORMAT,
        "values": values,
        "size": list(x.shape),
        "stride": list(x.stride()),
        "storage_offset": x.storage_offset(),
        "storage_elements": x.untyped_storage().nbytes() // x.element_size(),
        "device": str(x.device),
        "target": target,
        "outcome": outcome,
        "detail": detail,
    }
    digest = hashlib.sha1(wire.tensor_bytes(values).tobytes())
    digest.update(repr((payload["size"], payload["stride"], payload["storage_offset"], str(values.dtype))).encode())
    path = directory / f"lse-fuzz-{outcome}-{digest.hexdigest()[:10]}.pt"
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def is_saved_input(path: Path | str) -> bool:
    try:
        data = torch.load(path, weights_only=True)
    except Exception:
        return False
    return isinstance(data, dict) and data.get("format") == INPUT_FORMAT


def load_input(path: Path | str, device: str | torch.device | None = None) -> tuple[torch.Tensor, dict]:
    """The saved input rebuilt with its strides and storage offset (padding poisoned with NaN,
    huge storages allocated lazily), and the saved metadata."""
    path = Path(path)
    if not path.is_file():
        raise InvalidArgument(f"path={str(path)!r}: no such file.")
    try:
        data = torch.load(path, weights_only=True)
    except Exception as exc:
        raise InvalidArgument(f"path={str(path)!r} is not a saved input ({type(exc).__name__}).") from None
    if not isinstance(data, dict) or data.get("format") != INPUT_FORMAT:
        raise InvalidArgument(f"path={str(path)!r} is not a saved input (format {INPUT_FORMAT!r}).")
    values = data["values"]
    device = torch.device(device if device is not None else "cpu")
    elements = int(data["storage_elements"])
    storage = torch.empty(elements, dtype=values.dtype, device=device)
    if elements * values.element_size() <= WHOLE_STORAGE_LIMIT:
        storage.fill_(math.nan)
    x = storage.as_strided(tuple(data["size"]), tuple(data["stride"]), int(data["storage_offset"]))
    x.copy_(values.to(device))
    meta = {k: v for k, v in data.items() if k != "values"}
    return x, meta


class RestartingImpl:
    """An :class:`IsolatedImpl` that starts a new worker when the last one was lost.

    For test suites (``pytest --lse-isolate``): a crash or hang fails the test that caused it,
    and the next test gets a fresh worker instead of the same :class:`WorkerLost` again.
    """

    def __init__(self, target: str, **options) -> None:
        self.target = target
        self._options = options
        self._impl: IsolatedImpl | None = None

    def start(self) -> RestartingImpl:
        if self._impl is None or self._impl.lost is not None:
            self.close()
            self._impl = IsolatedImpl(self.target, **self._options).start()
        return self

    def __call__(self, x: torch.Tensor) -> object:
        self.start()
        assert self._impl is not None
        return self._impl(x)

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()
            self._impl = None

    def __repr__(self) -> str:
        return f"RestartingImpl({self.target!r})"
