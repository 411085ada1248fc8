"""Run the implementation under test in a worker process, so its failures stay there.

    with IsolatedImpl("path/to/kernel.py:lse", device="cpu", call_timeout=60) as impl:
        result = lse_fuzz.check(impl, budget=200)   # the runner stays here

The fuzz runner (Hypothesis, the float64 oracle, every check) runs in this process; only the
candidate runs in the worker (:mod:`fuzz.isolation.worker.process`). ``IsolatedImpl`` is a callable proxy:
each call ships the input (its storage bytes, size, strides, storage offset and dtype) to the
worker, which rebuilds the same strided view, calls the candidate, and sends back the output. A
CPU input's storage is a file mapping this process shares with the worker
(:mod:`fuzz.isolation.worker.shared_input`), compared here after the call, so the candidate cannot hide
a change by tampering with its own process; other inputs come back as bytes when the worker saw
them change. A change is written back here so ``input_unchanged`` sees the mutation. The worker
allocates nothing the runner compares against.

Against answers that do not come from computing: the same tensor object here maps to the same
object in the worker (so new values written into a reused input, as the ``fresh_values`` check
does, meet whatever the candidate cached by object, pointer or shape); an output stays alive in the
worker while the caller holds its copy here, and its bytes come back after every call, so a buffer
the candidate returns again and overwrites changes the caller's copy as it would in process
(:attr:`IsolatedImpl.output_changes`); an output aliasing the input (by address, whatever storage
object wraps it) comes back as a view of it; an output the caller dropped and nothing else refers
to, and every input storage the worker drops, is filled with NaN bits before its memory can be
reused (a row the kernel never writes cannot inherit a right answer from the previous call); and
the input's bytes are compared after every call, not only the calls the checks inspect
(:attr:`IsolatedImpl.input_changes`).

What a call can end in (:class:`fuzz.outcomes.Outcome`, mapped by :func:`fuzz.outcomes.call_outcome`):

* it returned: any object comes back (a tensor with its dtype, shape and device; anything else
  as a stand-in with the same type name), and the checks judge it;
* it raised: :class:`CandidateRaised` (an ``Exception``) carries the worker's traceback and
  exception chain, and the runner reports it as the implementation's error; the worker lives on;
* the worker died (segfault, abort, ``sys.exit``, ``os._exit``), hung, ran out of memory or into another
  resource limit (named with its value): :class:`fuzz.outcomes.ImplLost`, which stops the run at once.

What the isolation is: a separate process in its own session (the terminal's Ctrl-C does not reach
it; it is killed with its process group), with a scrubbed environment, its own temporary working
directory, stdin from /dev/null, stdout and stderr captured to files (reported as noise), core dumps
off, an address-space limit on the CPU, a file-size limit, and a kill when this process or the fork
server dies. What it is not: a security sandbox. The candidate runs with your user's rights; it
protects the fuzz run from accidents (crashes, hangs, leaks, stray output, corrupted interpreter
state), not the machine from hostile code.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from ... import defaults, validate
from ...gpu_memory import MEMORY_WAIT
from ...outcomes import HarnessError, ImplLost, Outcome, call_outcome, describe_exit
from ...target import resolve_target
from ...timing import HANG_FACTOR, Compile, hang_deadline, reference_seconds
from .. import wire
from ..environment import (FILE_SIZE_LIMIT, INPUT_RESERVE, breached, default_memory_limit, worker_environment,
                           worker_sys_path)
from ..fork_server.child import Child
from ..fork_server.client import tell_loaded, zygote_for
from ..guard.stops import resumed_by_pool, unwatch, watch
from .bench import BenchRequests
from .codec import decode_output, encode_input, write_back
from .compile_clock import CompileClock
from .held_outputs import HeldOutputs
from .idle import WINDOW, Watch
from .noise import Noise
from .raised import LoadFailed, raised_from
from .shared_input import SharedInput

__all__ = ["IsolatedImpl"]

LONGEST_WAIT = 7 * 24 * 3600.0
"""Seconds of the longest single wait for a worker's reply (a wait given longer is this long)."""

DEFAULT_CALL_TIMEOUT = defaults.CALL_TIMEOUT
"""Seconds one call may take, Triton compilation of a new specialisation included."""

DEFAULT_COMPILE_TIMEOUT = defaults.COMPILE_TIMEOUT
"""Seconds one call may spend compiling (Triton, autotuning, torch.compile): not counted as its time."""

DEFAULT_LOAD_TIMEOUT = defaults.CALL_TIMEOUT
"""Seconds loading the target may take (the candidate's import and the worker's start; compiling
not counted), as a call at its first deadline: a correct candidate loads in under 4 s on a busy
2-core machine (0.1-0.2 s for a Triton kernel), and an import that hangs costs its slot this long,
not 120 s. On a GPU its CUDA context may also wait up to :data:`fuzz.gpu_memory.MEMORY_WAIT`."""
MAX_FRAME = 1 << 34
"""Largest frame accepted from a worker (an output or the input's storage)."""

WORKER_ENTRY = "fuzz.isolation.worker.process:worker_main"


@dataclass
class _Pinned:
    """What the worker said its autotuned kernels ran in a call made under :meth:`IsolatedImpl.pinned`."""

    lines: list[str] | None = None


class IsolatedImpl(BenchRequests):
    """A callable ``x -> object`` that runs ``target`` in a worker process.

    ``target`` is a TARGET string (``path/to/file.py:func`` or ``pkg.module:func``). The worker
    starts on :meth:`start` (or the first call) and serves every call of this object, so its
    imports and Triton compilations are paid once. ``call_timeout`` is each call's first deadline:
    past it, ``calibrate(x)`` (default: the seconds reference.lse takes on the same input) sets a
    second one (:func:`fuzz.timing.hang_deadline`), and only a call past both is a hang (None: the
    second deadline is the first again). Seconds the worker spends compiling count toward neither;
    ``compile_timeout`` bounds them per call (:mod:`fuzz.isolation.worker.compile_watch`). ``timeout`` (optional) bounds the whole life of the worker
    from :meth:`start` (a candidate's time budget). ``memory_limit`` (bytes) is the memory the candidate may use on the CPU
    (default :func:`default_memory_limit`; 0 for no limit), enforced as the worker's address-space
    limit with :data:`~fuzz.isolation.environment.INPUT_RESERVE` added for the inputs the fuzzer builds. ``threads``: torch intra-op threads of
    the worker (default 1 on the CPU). :meth:`bench` times it on the bandwidth benchmark's input.
    """

    relays_refusals = True
    """What it raises carries the worker's word that the CPU emulator refused a construct
    (``emulation``, see :mod:`fuzz.interpreter.emulation`): the checks make it an ``unsupported`` run."""

    def __init__(self, target: str, *, device: str | torch.device = "cpu", call_timeout: float = DEFAULT_CALL_TIMEOUT,
                 load_timeout: float | None = None, timeout: float | None = None,
                 compile_timeout: float = DEFAULT_COMPILE_TIMEOUT,
                 memory_limit: int | None = None, threads: int | None = None,
                 environ: dict[str, str] | None = None,
                 calibrate: Callable[[torch.Tensor], float | None] | None = reference_seconds) -> None:
        self.target = resolve_target(target)
        self.device = str(torch.device(device))
        self.call_timeout = validate.seconds(call_timeout, name="call_timeout")
        if load_timeout is None:
            load_timeout = DEFAULT_LOAD_TIMEOUT + (MEMORY_WAIT if self.device.startswith("cuda") else 0.0)
        self.load_timeout = validate.seconds(load_timeout, name="load_timeout")
        self.timeout = validate.seconds(timeout, name="timeout", optional=True)
        self.compile_timeout = validate.seconds(compile_timeout, name="compile_timeout")
        self.memory_limit = default_memory_limit(self.device) if memory_limit is None else memory_limit
        if not self.device.startswith("cpu"):
            self.memory_limit = 0  # CUDA reserves huge address ranges: RLIMIT_AS would break it
        # One intra-op thread on the CPU by default: interpreted kernels are single-threaded numpy,
        # and two processes with OpenMP pools on a few cores mostly spin against each other.
        self.threads = threads if threads is not None else (1 if self.device.startswith("cpu") else None)
        self.environ = environ
        self.calibrate = calibrate  # seconds a trusted implementation takes on an input: the second deadline
        self.second_deadline: tuple[float, float | None] | None = None  # (seconds, reference seconds) of the last one
        self._tuning: dict = {"combinations": 0, "description": []}  # the worker's autotuned kernels
        self._config: int | None = None  # the configuration pinned for the calls in progress
        self.memory_bounds = True  # the CPU's bounds checker on in the worker (off: the run left memory_bounds out)
        self.uninitialized_read = True  # and its reads of unwritten allocations (off: left uninitialized_read out)
        self._pinning: _Pinned | None = None
        self.guard = None  # optional: a context manager factory each call runs inside (a GPU lock)
        self.calls = 0
        self.input_changes = 0  # calls after which the input's bytes differed from what was sent
        self.candidate_seconds = 0.0
        self.load_seconds = 0.0
        self.variants = 0  # specializations the worker launched (fuzz.interpreter.specialization.launched): its compiles on a GPU
        self.lost: ImplLost | None = None
        self.pid: int | None = None
        self._conn: Connection | None = None
        self._child: Child | None = None
        self._home: Path | None = None
        self._deadline: float | None = None
        self._shared = SharedInput()
        self._held = HeldOutputs()  # earlier outputs the caller may still hold (see held_outputs)
        self.runtime_ops: dict[str, set[str]] = {}  # runtime flag -> aten operators seen (see op_record)
        self._clock = CompileClock(self.compile_timeout)  # compiling stops a request's clock (compile_watch)
        self._pending: tuple[dict, list] | None = None  # a reply read while waiting past compile notices

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> IsolatedImpl:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"IsolatedImpl({self.target!r}, device={self.device!r})"

    def gradient(self) -> IsolatedImpl:
        """The implementation's gradient ``x -> dx`` (:func:`fuzz.gradient.gradient_of`, for
        ``--backward``) in a worker of its own, with this one's limits; the caller closes it."""
        twin = IsolatedImpl(f"{self.target}@backward", device=self.device, call_timeout=self.call_timeout,
                            load_timeout=self.load_timeout, timeout=self.timeout,
                            compile_timeout=self.compile_timeout, memory_limit=self.memory_limit,
                            threads=self.threads, environ=self.environ, calibrate=self.calibrate)
        twin.guard = self.guard
        return twin

    def start(self) -> IsolatedImpl:
        """Start the worker and load the target; LoadFailed (an InvalidArgument) if it cannot."""
        if self._conn is not None:
            return self
        env = worker_environment(self.environ)
        if self.device == "cpu":
            # CPU tensors need Triton's interpreter, whatever GPU this machine has: a fork server
            # of the interpreter's own (Triton's mode is fixed when it is imported). The GPU is
            # hidden too, so the candidate runs as on a CPU-only host: on an H200 host a correct
            # candidate's import-time torch.cuda.is_available() initialized CUDA, whose address
            # space reservation then left no room under RLIMIT_AS for a lazily allocated input.
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        server = zygote_for(env)
        # Neutral names (tmpXXXXXXXX/cwd): the candidate's working directory does not say who runs it.
        self._home = Path(tempfile.mkdtemp())
        cwd = self._home / "cwd"
        cwd.mkdir()
        rlimits = {"RLIMIT_FSIZE": FILE_SIZE_LIMIT}
        if self.memory_limit:
            rlimits["RLIMIT_AS"] = int(self.memory_limit) + INPUT_RESERVE
        self._child = Child.spawn(server, WORKER_ENTRY,
                                  {"target": self.target, "device": self.device, "threads": self.threads},
                                  cwd=cwd, env=dict(env, TMPDIR=str(cwd), TEMP=str(cwd), TMP=str(cwd)),
                                  sys_path=worker_sys_path(self.environ), rlimits=rlimits,
                                  stdout=self._home / "stdout", stderr=self._home / "stderr")
        self.pid = self._child.pid
        if not resumed_by_pool():  # in a pool's driver, the pool's process continues it (the driver reports it)
            watch(self.pid)  # another candidate may stop it: it is continued (see guard.stops)
        self._conn = self._child.conn
        started = time.monotonic()
        if self.timeout is not None:
            self._deadline = started + self.timeout
        reply = self._receive(min(self.load_timeout, self._time_left()), what="loading the target")
        self.load_seconds = time.monotonic() - started
        self._tuning = reply[0].get("tuning") or self._tuning
        if reply[0]["op"] != "load_failed":
            tell_loaded(self.pid)  # a pool's driver tells its pool: its candidate's code runs from now
            return self
        message = reply[0]["message"]
        self.close()
        if reply[0].get("harness"):
            raise HarnessError(message)
        raise LoadFailed(message if message.startswith("target=") else f"target={self.target!r}: {message}",
                         reply[0].get("chain"))

    def close(self) -> None:
        """Stop the worker (kill its process group) and remove its temporary directory."""
        if self._conn is not None:
            try:
                wire.send_message(self._conn, {"op": "close"})
            except OSError:
                pass
            self._child.close()
            self._conn = None
            self._shared.drop()
            if self.lost is None:
                self._child.kill()
                self._child.wait(timeout=2.0)
        unwatch(self.pid)
        if self._home is not None:
            self._final_noise = self.noise()
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def _time_left(self) -> float:
        if self._deadline is None:
            return math.inf
        return self._deadline - time.monotonic()

    # -- noise --------------------------------------------------------------------------------

    def noise(self) -> Noise:
        """What the worker has printed so far (also after :meth:`close`)."""
        if self._home is None:
            return getattr(self, "_final_noise", Noise(0, 0, "", ""))
        return Noise.read(self._home / "stdout", self._home / "stderr")

    def stderr_tail(self, limit: int = 4000) -> str:
        if self._home is None or self._child is None:
            return ""
        return self._child.tail(limit)

    # -- calls --------------------------------------------------------------------------------

    def _lose(self, outcome: Outcome, detail: str, *, returncode: int | None = None,
              x: torch.Tensor | None = None, reaped: bool = False) -> ImplLost:
        """Kill what is left of the worker (its process group), wait until it is gone, and record
        why it was lost (a resource limit it ran into named first, with its value)."""
        noise = self.noise()
        limit = breached(outcome, memory_limit=self.memory_limit, printed=max(noise.stdout_bytes, noise.stderr_bytes))
        if limit:
            detail = f"{limit}: {detail}"
        if self._child is not None:
            self._child.kill()
            if not reaped:
                self._child.wait(timeout=5.0)
        self.lost = ImplLost(outcome, detail, call=self.calls, input=x, returncode=returncode,
                               stderr=self.stderr_tail())
        return self.lost

    def _receive(self, timeout: float, *, what: str, x: torch.Tensor | None = None,
                 deadline: tuple[float, float | None] | None = None, max_frame: int = MAX_FRAME):
        """The worker's next reply; ImplLost if it dies or does not answer within ``timeout``
        seconds of not compiling.

        ``deadline``: (the second deadline, the reference's seconds) of a call given two."""
        assert self._conn is not None
        if not self._reply_within(timeout, what=what, x=x, max_frame=max_frame):
            if self.timeout is not None and self._time_left() <= 0:
                detail = f"the candidate's time budget of {self.timeout:g} s ran out while {what}"
            elif self._clock.compiling:
                detail = f"no answer while {what}: {self._clock.describe()}"
            elif deadline is not None:
                against = (f"{HANG_FACTOR:g} x the {deadline[1]:.3g} s reference.lse takes on this input, at least "
                           "the first again" if deadline[1] is not None else "the first again")
                detail = (f"no answer within {deadline[0]:.3g} s while {what}: past the first deadline of "
                          f"{self.call_timeout:g} s and the second ({against}): a hang{self._watched}")
            else:
                detail = f"no answer within {max(timeout, 0):g} s while {what} (a hang, or far too slow)"
            detail += self._clock.compiled_in(self.calls)
            raise self._lose(call_outcome(timed_out=True), detail, x=x)
        reply, self._pending = self._pending, None
        self._clock.next_request()
        return reply

    def _reply_within(self, timeout: float, *, what: str, x: torch.Tensor | None, max_frame: int) -> bool:
        """Whether a reply is ready within ``timeout`` seconds the worker did not spend compiling
        (a compile may go on for the compile limit), never past the candidate's time budget."""
        left = timeout
        while self._pending is None:
            compiling = self._clock.compiling
            wait = min(self._clock.left() if compiling else left, self._time_left())
            started = time.monotonic()
            # Clamped: a wait of n calls' timeouts (a benchmark round of a very fast candidate, with
            # no budget) can exceed what poll() takes (about 24 days in milliseconds) and raise.
            if not self._conn.poll(min(max(wait, 0.0), LONGEST_WAIT)):
                return False
            if not compiling:
                left -= time.monotonic() - started
            header, frames = self._read(what=what, x=x, max_frame=max_frame)
            if not self._clock.note(header, call=self.calls):
                self._pending = (header, frames)
        return True

    def _read(self, *, what: str, x: torch.Tensor | None, max_frame: int):
        try:
            return wire.recv_message(self._conn, max_frame=max_frame)
        except wire.FrameTooLarge as exc:
            # Unread, and the channel is out of step: the worker goes. The grader's memory stays
            # bounded by what an answer to this call can hold, whatever the worker sends.
            raise self._lose(Outcome.CRASHED, f"the worker sent {exc.size} bytes while {what}, more than any "
                             f"answer to it holds ({max_frame}): refused unread", x=x) from None
        except (EOFError, OSError, ValueError):
            code = self._child.wait() if self._child is not None else None
            outcome = call_outcome(returncode=code if code is not None else -signal.SIGKILL)
            raise self._lose(outcome, f"the worker {describe_exit(code)} while {what}", returncode=code, x=x,
                             reaped=code is not None) from None

    @property
    def compile_seconds(self) -> float:
        """Seconds the worker has spent compiling, all its calls together (kept, not summed again)."""
        return self._clock.total

    @property
    def compiles(self) -> list[Compile]:  # what the worker compiled, timed here (findings, never failures)
        return list(self._clock.compiles)

    def _receive_call(self, what: str, x: torch.Tensor, max_frame: int):
        """The reply to a call, with two deadlines (:mod:`fuzz.timing`): past ``call_timeout`` the call
        is timed against the reference on the same input, and it is a hang only once it also ran past
        the second, calibrated deadline, or (on the CPU) only waited after the first (:mod:`.idle`).
        Seconds spent compiling count toward neither."""
        assert self._conn is not None
        started = time.monotonic()
        first = min(self.call_timeout, self._time_left())
        if first > 0 and self._reply_within(first, what=what, x=x, max_frame=max_frame):
            return self._receive(0.0, what=what, x=x, max_frame=max_frame)
        if self._time_left() <= 0 or self.calibrate is None:
            return self._receive(0.0, what=what, x=x, max_frame=max_frame)
        watch, self._watched = (Watch(self.pid) if self.device == "cpu" else None), ""  # set for the reason
        while watch is not None:
            if self._reply_within(WINDOW, what=what, x=x, max_frame=max_frame) or self._time_left() <= 0:
                return self._receive(0.0, what=what, x=x, max_frame=max_frame)
            if (idle := watch.idle()) is not None:
                raise self._lose(call_outcome(timed_out=True), f"no answer within {time.monotonic() - started - self._clock.spent():.3g} s "
                                 f"while {what}: past the first deadline of {self.call_timeout:g} s, and {idle}: a hang"
                                 f"{self._clock.compiled_in(self.calls)}", x=x)
            self._watched, watch = f" (the worker watched after the first deadline: {watch.seen})", watch.again()
        try:
            reference = self.calibrate(x)  # the parent is idle meanwhile: the worker keeps running
        except Exception:  # no calibration: the second deadline is the first again; the reply is still read
            reference = None
        second = hang_deadline(self.call_timeout, reference)
        self.second_deadline = (second, reference)
        ran = time.monotonic() - started - self._clock.spent()
        return self._receive(min(second - ran, self._time_left()), what=what, x=x,
                             deadline=(second, reference), max_frame=max_frame)

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
        spec["config"] = self._config
        spec["memory_bounds"] = self.memory_bounds
        spec["uninitialized_read"] = self.uninitialized_read
        # A CPU input lives in memory this process maps too: whether the call changed it is
        # decided here, not by the candidate's process (see shared_input).
        shared = self.device == "cpu" and self._shared.place(spec, frame)
        self.calls += 1
        what = f"call {self.calls} on a {tuple(x.shape)} {wire.dtype_name(x.dtype)} input"
        with self.guard() if self.guard is not None else contextlib.nullcontext():
            try:
                wire.send_message(self._conn, {"op": "call", "input": spec, "released": self._held.released()},
                                  (b"",) if shared else (frame,))
            except OSError:
                pass  # the worker is gone; _receive reports how
            self._shared.send(self._conn)
            # An answer is an (M,) result of at most 16-byte elements, or the input's bytes back.
            header, frames = self._receive_call(what, x, max(memoryview(frame).nbytes, 16 * x.shape[0], 64,
                                                             self._held.largest()) if x.dim() else MAX_FRAME)
        op = header.get("op")
        if self._pinning is not None:
            self._pinning.lines = list(header.get("configs") or [])
        if isinstance(header.get("variants"), int):  # the worker's count of specializations it launched
            self.variants = header["variants"]
        if op == "returned":
            self.candidate_seconds += float(header.get("seconds", 0.0))
            for flag, operators in (header.get("ops") or {}).items():
                self.runtime_ops.setdefault(str(flag), set()).update(str(o) for o in operators)
            changed = self._shared.changed(frame) if shared else \
                (frames[-1] if header.get("input_changed") else None)
            if changed is not None:
                self.input_changes += 1
                write_back(x, spec, changed)
            held = list(header.get("held") or [])
            own = len(frames) - len(held) - bool(header.get("input_changed"))
            self._held.update(held, frames[own:own + len(held)])
            return self._held.hold(decode_output(header["output"], frames[:own], x), header["output"].get("id"))
        if op == "raised":
            if shared and header.get("during") == wire.REBUILDING_INPUT:
                self._shared.drop()  # the worker holds no view of it: the next call sends it anew
            self.candidate_seconds += float(header.get("seconds", 0.0))
            message = f"{header.get('type', 'Exception')}: {header.get('message', '')}"
            if header.get("during"):
                message += f" (while {header['during']})"
            if header.get("kind") == "harness":
                raise HarnessError(f"{message} during {what}: other processes held the GPU's memory; "
                                   "run fewer jobs at once, or pass --no-huge-offsets")
            outcome = call_outcome(error_kind=header.get("kind", "exception"))
            if outcome.fatal:
                raise self._lose(outcome, f"{message} during {what}", x=x)
            raise raised_from(header, emulated=self.device == "cpu")
        if op == "exit":
            code = self._child.wait()
            raise self._lose(call_outcome(exit_requested=True), f"{header.get('detail')} during {what}",
                             returncode=code if code is not None else header.get("code"), x=x,
                             reaped=code is not None)
        raise self._lose(Outcome.CRASHED, f"the worker sent an unexpected {op!r} message during {what}", x=x)

    @property
    def output_changes(self) -> int:
        """Calls after which an output the caller still held had changed (a buffer returned again)."""
        return self._held.changes

    def release_input(self) -> None:
        """Have the worker drop its copy of the last input now (a huge-offset view's gigabytes of
        device memory) instead of when the next input arrives."""
        if self._conn is None or self.lost is not None:
            return
        self._shared.drop()
        try:
            wire.send_message(self._conn, {"op": "release"})
        except OSError:
            return  # the worker is gone; the next call reports how
        header, _ = self._receive(min(self.call_timeout, self._time_left()), what="releasing the input")
        if header.get("op") != "released":
            raise self._lose(Outcome.CRASHED, f"the worker sent {header.get('op')!r} instead of releasing its input")

    # -- autotuned kernels (see fuzz.interpreter.autotune) -------------------------------------------------

    def tuning(self) -> tuple[int, list[str]]:
        """(how many configuration combinations the worker's autotuned kernels have, their
        description); (0, []) when the candidate has none."""
        self._ensure_ready()
        return int(self._tuning.get("combinations") or 0), list(self._tuning.get("description") or [])

    @contextlib.contextmanager
    def pinned(self, choice: int | None):
        """Calls inside run the autotuned kernels' configuration ``choice`` (pinned in the worker);
        the yielded object's ``lines`` say which ran in the last call."""
        previous, self._config = self._config, choice
        self._pinning = _Pinned()
        try:
            yield self._pinning
        finally:
            self._config, self._pinning = previous, None
