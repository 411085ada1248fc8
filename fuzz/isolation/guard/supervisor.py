"""A batch that outlives its grader: SIGKILL, the one signal the guard cannot take, no longer ends it.

A candidate runs as the grader's user and can SIGKILL the grader, which no process can block or
ignore. The batch used to end there, its report holding what was finished, until someone typed
``--resume`` (which the journal, ``fuzz.grading.journal``, turns into a verdict on the killer).
Now the process the shell started only supervises (:func:`supervise`) and a grading process it
starts does the work: when the grader dies of SIGKILL, the supervisor starts another that
continues the batch as ``--resume`` would (the same options, the same private seed, held in
memory and never put on a command line), until one ends by itself. A killer costs the batch a
restart (the fork server's imports again, seconds) and its own run alone, as the journal has it;
the others keep flowing.

The grader is started detached (a child forks it and exits), so no parent chain leads from a
candidate's worker to the supervisor: a candidate that walks up its ancestors to find the grader
finds the grader. It tells its exit code over a pipe (:meth:`Supervision.ended`), and holds the
reading end of another whose writing end only the supervisor holds: when that closes (the
supervisor died) it sends itself SIGTERM, which its guard obeys (the batch ends, resumable). The
supervisor imports no torch and starts nothing else but a watchdog of its own
(:func:`.watchdog.keep_running`: stopped by a candidate, it would never return to the shell). It
holds :data:`~.signals.GUARDED` blocked, as the grader does, and takes them with
``sigtimedwait``; by sender (:func:`~.signals.sender_of`, the grader's tree):

* the kernel's (the terminal's Ctrl-C, a hang-up): the terminal signals its whole foreground
  group, the grader too: nothing to do;
* a process's outside the grader's tree (``kill`` from a shell, ``timeout``, a CI runner): passed
  on to the grader, which obeys it as it would have; the batch then ends, whatever the grader dies of;
* a process's of the grader's tree (a candidate's): ignored, and said on stderr. It is blamed on no
  candidate (the grader's guard blames those sent to the grader itself).

A grader found stopped for :data:`CONTINUE_AFTER` seconds is continued: a candidate that stopped
the grader's watchdog with it no longer holds the batch. The supervisor continues the watchdog,
which continues the grader and tells it, so the stop is blamed as any other; the grader itself
if the watchdog is gone.
What a killed grader leaves behind is killed before the next starts: its children as last seen
(its fork server, its watchdog), which a candidate may have stopped, so that they would never read
that their parent is gone (a stopped fork server outlived its test run that way, for good). When
deaths stop adding records (:data:`FRUITLESS` in a row), something else is killing the grader (the
machine's out-of-memory killer): the supervisor stops there and says so.

Not defended: a candidate that finds the supervisor in /proc and SIGKILLs it as well (the batch
ends, resumable, as before); one that stops the supervisor, its watchdog, the grader and the
grader's watchdog; a sender that exits before its signal is read looks like one from outside (as
in the guard), which ends the batch, resumable.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..processes import child_pids, stat_fields
from .signals import GUARDED, SUPPORTED, Sender, _filled, sender_of
from .watchdog import is_watchdog_of, keep_running

__all__ = ["CONTINUE_AFTER", "FRUITLESS", "Supervision", "supervise"]

FRUITLESS = 3
"""Deaths in a row that add no record to the report, after which the supervisor gives up. A killer
costs a batch at most two deaths: one beside others, one alone, after which the journal convicts
it as the next run starts (a record); so one death in a row without a new record, not three."""

WAIT = 0.1
"""Seconds between looks at the grader when no signal comes."""

CONTINUE_AFTER = 5.0
"""Seconds the grader may stay stopped (state ``T``) before the supervisor continues it: its own
watchdog (:mod:`.watchdog`) does that within a second and tells the grader, which blames the stop
(the margin is for a loaded machine); this is for a candidate that stopped the watchdog too. A
stop of the whole process group (the terminal's Ctrl-Z) stops the supervisor as well, which then
sees nothing."""


@dataclass(frozen=True)
class Supervision:
    """What :func:`supervise` returned to this process."""

    code: int | None  # in the supervisor: the command's exit code; None in the grader, which goes on
    again: bool = False  # in the grader: it continues a batch whose grader was killed
    _told: int | None = None  # in the grader: where its exit code goes

    def ended(self, code: int) -> int:
        """In the grader: tell the supervisor ``code``, the command's exit code, and return it."""
        if self._told is not None:
            with contextlib.suppress(OSError):
                os.write(self._told, f"code {int(code)}\n".encode())
        return code


def supervise(records: Callable[[], int], *, name: str = "lse-fuzz") -> Supervision:
    """Start the grader and supervise it until it ends by itself; start another after each of its
    deaths by SIGKILL. ``records`` counts the records of the batch's report so far (read after each
    death). Returns ``Supervision(code)`` in the supervisor, ``Supervision(None, again)`` in a
    grader, which goes on and tells its exit code with :meth:`Supervision.ended`. Where signals
    cannot be taken with their sender (not Linux), nothing starts and this process grades."""
    if not SUPPORTED or not os.path.isdir("/proc"):
        return Supervision(None)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # taken by sigtimedwait below
    # Its watchdog first: a grader forked before it could stop this process while none ran (a race seen in CI).
    supervisor, watchdog = os.getpid(), keep_running()
    deaths = fruitless = 0
    before = -1  # the first death adds to nothing: never fruitless
    try:
        while True:
            grader = _start(again=deaths > 0)
            if isinstance(grader, Supervision):
                return grader  # in the grader
            if grader is None:
                print(f"{name}: internal error: the grading process did not start", file=sys.stderr, flush=True)
                return Supervision(3)  # fuzz.outcomes.ExitCode.INTERNAL
            pid, told, alive = grader
            code, obeyed = _wait(pid, told, name=name)
            os.close(alive)  # that grader's lifeline: it is gone
            if code is not None:
                return Supervision(code)
            if obeyed is not None:  # it obeyed a signal from outside: the batch ends, resumable
                return Supervision(128 + obeyed)
            deaths += 1
            now = records()
            fruitless = 0 if now > before else fruitless + 1
            before = now
            if fruitless >= FRUITLESS:
                print(f"{name}: the grader was killed {fruitless} times in a row with no new record; stopped: the "
                      "report holds the finished candidates (is the machine out of memory?); continue with --resume",
                      file=sys.stderr, flush=True)
                return Supervision(128 + signal.SIGKILL)
            print(f"{name}: the grader was killed (SIGKILL, which a candidate can send) with {now} record(s) in the "
                  f"report; continuing the batch as --resume would (restart {deaths})", file=sys.stderr, flush=True)
    finally:
        if watchdog is not None and os.getpid() == supervisor:  # not in a grader: the watchdog is ours
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                watchdog.kill()
                watchdog.wait(timeout=5)


def _start(*, again: bool) -> tuple[int, int, int] | Supervision | None:
    """Start a grader, detached (a child forks it and exits at once, so no parent chain leads from the
    grader's processes to this one): (its pid, the pipe it tells on, its lifeline's end) here, its
    Supervision there; None when it could not start."""
    sys.stdout.flush()
    sys.stderr.flush()  # nothing buffered is written twice
    lifeline, alive = os.pipe()  # the grader holds the reading end: EOF once this process is gone
    told, tell = os.pipe()
    middle = os.fork()
    if middle == 0:
        middle = os.getpid()  # read here: by the grader's first step this one may be gone, its parent another
        try:
            grader = os.fork()
        except BaseException:  # noqa: BLE001 - the middle process never returns to the caller
            os._exit(1)
        if grader:
            os._exit(0)
        # The grader tells its own pid, first: told by the middle process, it could come after the
        # grader's exit code (a grader that ends at once while the middle one waits for a CPU).
        _write(tell, f"pid {os.getpid()}\n".encode())  # a supervisor gone already: its lifeline ends this one
        _orphaned(middle)
        os.close(alive)
        os.close(told)
        _become_grader(lifeline, tell)
        return Supervision(None, again=again, _told=tell)
    os.close(lifeline)
    os.close(tell)
    os.waitpid(middle, 0)
    line = b""
    while not line.endswith(b"\n") and (chunk := os.read(told, 1)):
        line += chunk
    if not line.startswith(b"pid "):
        os.close(told)
        os.close(alive)
        return None
    return int(line.split()[1]), told, alive


def _orphaned(middle: int, *, limit: float = 5.0) -> None:
    """Return once the middle process is gone (this one reparented), or after ``limit`` seconds: it
    exits at once, but under load "at once" can come after the grader's first steps, and until then a
    parent chain leads from the grader to the supervisor. Said on stderr when the limit is reached."""
    deadline = time.monotonic() + limit
    while os.getppid() == middle:
        if time.monotonic() >= deadline:
            print(f"lse-fuzz: the process that started the grader (pid {middle}) had not exited after {limit:g} s; "
                  "grading goes on with it as the grader's parent", file=sys.stderr, flush=True)
            return
        time.sleep(0.001)


def _become_grader(lifeline: int, tell: int) -> None:
    """The grader's first steps: SIGCHLD as any process has it; SIGTERM to itself once the
    supervisor is gone (its guard obeys it: the batch ends, resumable); "exit" told at exit if no
    code was (an exception out of the command: no death to continue after)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})

    def outlive_not() -> None:
        with contextlib.suppress(OSError):
            while os.read(lifeline, 1):
                pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=outlive_not, name="lse-fuzz-supervised", daemon=True).start()
    atexit.register(lambda: _write(tell, b"exit\n"))


def _write(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, data)


def _wait(grader: int, told: int, *, name: str) -> tuple[int | None, int | None]:
    """(The grader's exit code as it told it, None when it was killed; the signal from outside passed
    on to it, if any), once it ended: the pipe it tells on at its end, or its process gone. A grader
    found stopped for :data:`CONTINUE_AFTER` seconds is continued."""
    os.set_blocking(told, False)
    said, obeyed, stopped, children = b"", None, None, {}
    try:
        while True:
            try:
                chunk = os.read(told, 4096)
            except BlockingIOError:
                chunk = None
            if chunk:
                said += chunk
                continue
            state = _state(grader)
            if chunk == b"" or state in (None, "Z", "X"):
                break
            children = _children(grader) or children
            stopped = _continued(grader, stopped) if state == "T" else None
            info = signal.sigtimedwait(GUARDED | {signal.SIGCHLD}, WAIT)
            if info is not None and _filled(info) and info.si_signo != signal.SIGCHLD and _pass_on(info, grader, name):
                obeyed = info.si_signo
    finally:
        with contextlib.suppress(OSError):
            said += os.read(told, 4096)
        os.close(told)
    words = said.split()
    if b"code" in words[:-1]:
        return int(words[words.index(b"code") + 1]), obeyed
    if b"exit" in words:
        return 1, obeyed
    _kill_leftovers(children)
    return None, obeyed


def _children(pid: int) -> dict[int, str]:
    """``pid``'s children (any of its threads'), each with its start time (stat(5) field 22)."""
    found = {}
    for child in child_pids(pid):
        fields = stat_fields(child)
        if fields and len(fields) > 19:
            found[child] = fields[19]
    return found


def _kill_leftovers(children: dict[int, str]) -> None:
    """Kill what a killed grader left behind: its children as last seen (its fork server, its
    watchdog), the same processes still (their start times). One a candidate stopped (its fork
    server, its watchdog) would never read that its parent is gone, and would stay, stopped, for
    good; SIGKILL ends a stopped process too, and the fork server's children die with it."""
    for pid, started in children.items():
        fields = stat_fields(pid)
        if fields and len(fields) > 19 and fields[19] == started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _continued(grader: int, since: float | None) -> float | None:
    """Continue the grader's watchdog once the grader has been seen stopped since ``since`` for
    :data:`CONTINUE_AFTER` seconds, so that the watchdog continues the grader and tells it (the
    stop is blamed); the grader itself if no stopped watchdog was found. When the grader was first
    seen stopped, or the wait starts again (None once the grader itself was continued)."""
    now = time.monotonic()
    if since is None:
        return now
    if now - since < CONTINUE_AFTER:
        return since
    watchdogs = _stopped_watchdogs(grader)
    for pid in watchdogs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    if watchdogs:
        return now
    with contextlib.suppress(ProcessLookupError):
        os.kill(grader, signal.SIGCONT)
    return None


def _stopped_watchdogs(grader: int) -> list[int]:
    """The grader's watchdogs (:mod:`.watchdog`) found stopped: children of it."""
    return [pid for pid in _children(grader) if _state(pid) == "T" and is_watchdog_of(pid, grader)]


def _state(pid: int) -> str | None:
    """The state of ``pid`` (``ps``'s letter), None once it is gone (the grader is no child of ours:
    a zombie of it is init's to reap)."""
    fields = stat_fields(pid)
    return fields[0] if fields else None


def _pass_on(info, grader: int, name: str) -> bool:
    """Judge a signal sent to the supervisor (see the module docstring); True when the grader was given it."""
    try:
        sender, _ = sender_of(info, root=grader)
    except Exception:  # noqa: BLE001 - /proc read as it changes: no proof of a stranger
        sender = Sender.UNPROVEN
    if sender is Sender.KERNEL:
        return False
    if sender is Sender.OUTSIDE and info.si_pid != grader:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grader, info.si_signo)
        return True
    print(f"{name}: ignored {_signal_name(info.si_signo)} sent to the command by pid {info.si_pid}, "
          "a process of the batch", file=sys.stderr, flush=True)
    return False


def _signal_name(signum: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(signum).name
    return f"signal {signum}"
