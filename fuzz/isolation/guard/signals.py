"""Signals sent to the grader: a candidate's are ignored and blamed on it, anyone else's obeyed.

Every process of a run shares one user with the candidates, so a candidate can ``kill()`` the
grader (found through its parent chain or in /proc) with SIGTERM or SIGINT and stop the batch as
if the user had pressed Ctrl-C. A signal handler cannot tell who sent a signal; ``sigwaitinfo``
can (``si_pid``, ``si_code``). So, while a :class:`SignalGuard` is on (``with SignalGuard() as guard: ...``):

* the signals of :data:`GUARDED` are blocked in every thread and one thread takes them with
  ``sigtimedwait``; the process starts its threads only after :func:`hold_signals` (torch starts one on
  import), so none of them can receive one behind that thread's back;
* a signal from a process of the run's own tree (a driver, a worker, anything a candidate
  started, also after ``setsid`` or a double fork) is ignored and kept as a :class:`SignalEvent`,
  which the caller blames on the candidate whose worker is among the sender's ancestors, or, for
  an orphan (adopted by the fork server: nothing ties it to its worker any more), on the job
  that was running alone at the time (:meth:`SignalGuard.claim`); when several were, each is a
  suspect (:meth:`SignalGuard.suspects`), which the grader runs again alone;
* a signal from the kernel (the terminal's Ctrl-C, a hang-up: ``SI_KERNEL``) or from a process
  outside the tree (``kill -TERM`` from a shell or a CI runner) is handed to the main thread as
  if it had arrived there: Ctrl-C and SIGTERM interrupt the run, resumable, exactly as before.

A process of the run found stopped (SIGSTOP: the fork server, a driver, a neighbour's worker)
is continued by the pool's process, which keeps that too as an event (:meth:`SignalGuard.add`,
see fuzz.isolation.guard.blame): no sender, only the jobs in flight while it happened. Such an event is
a job's, like an orphan's signal, only when that job was the only one in flight.

The grader is a child subreaper meanwhile (``PR_SET_CHILD_SUBREAPER``): should the fork server
die, what was below it is handed to the grader, not to init, and stays in the tree. Those
adopted processes are not reaped: a zombie keeps its parent in /proc, which is what tells a
sender that already exited from a stranger; there are at most the processes of the jobs in
flight when the fork server died. They live on while the run does, and when the guard ends they
are killed with everything below them (:func:`kill_adopted`): none outlives the run.

Residual risks (the tree is read when the signal is taken, not when it was sent):

* a sender that exits and is reaped by its own parent before the guard thread reads /proc, and
  whose pid the run never recorded (a worker's child, not the worker), looks like a stranger;
  the window is the time between ``kill()`` and our wake-up, microseconds on an idle machine (an
  orphan, reaped by the fork server, stays a zombie for 5 s of the grader's running time:
  fuzz.isolation.fork_server.server.ORPHAN_LINGER, so a grader stopped meanwhile still finds it);
* pid reuse: a recorded pid (:func:`remember`; the pool forgets a job's once it ended) whose
  process is gone is taken for the run's even if an unrelated process took that pid since and
  exited again; only after the pid counter wrapped (32768 pids on some systems) during one job;
* signals whose ``siginfo`` the sender writes itself (``sigqueue``: ``si_code`` < 0) or that the
  kernel sends for a file the candidate set up (``F_SETOWN``: SIGIO) prove no sender: ignored;
* SIGKILL and SIGSTOP cannot be blocked, and stop signals (SIGTSTP, SIGTTIN, SIGTTOU) are left as
  they are: the terminal's Ctrl-Z must still work. A stop of the grader alone is undone by its
  watchdog (:mod:`.watchdog`), which the guard starts and ends; one of the watchdog too is not.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import enum
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..processes import PR_GET_CHILD_SUBREAPER, PR_SET_CHILD_SUBREAPER, prctl, stat_fields
from . import watchdog

__all__ = ["GUARDED", "Sender", "SignalEvent", "SignalGuard", "Stopped", "describe_signals", "describe_stops", "forget",
           "hold_signals", "kill_adopted", "lineage", "release_signals", "remember", "sender_of", "spare"]

# Linux only, like the fork server: elsewhere (no sigtimedwait, no real-time signals) nothing is
# held or guarded and signals act as they always did.
SUPPORTED = hasattr(signal, "sigtimedwait") and hasattr(signal, "SIGRTMAX")

WAKE = getattr(signal, "SIGRTMAX", 0)
"""Sent to the main thread to break a blocking call once an interruption is due: a no-op handler."""

GUARDED = frozenset() if not SUPPORTED else frozenset({
    # What ends a default Python process and a person or a program may send to stop it...
    signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2,
    signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGIO, signal.SIGPWR, signal.SIGSTKFLT,
    signal.SIGXCPU,
    # ... the fault signals, which kill() can send too (a real fault is delivered even when blocked) ...
    signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGSEGV, signal.SIGSYS, signal.SIGTRAP,
    # ... and the real-time signals, which end a process by default.
    *range(signal.SIGRTMIN, WAKE),
})

SI_USER, SI_TKILL, SI_KERNEL = 0, -6, 0x80  # <asm-generic/siginfo.h>: kill(), tgkill(), the kernel
GRACE = 1.0
"""Seconds a sender that is already gone may take to show up among the recorded pids (a driver
reports its worker's pid to the pool a moment after the fork) before it is taken for a stranger."""
MAX_EVENTS = 1000  # kept per run: a flood of queued real-time signals costs no more


class Sender(enum.Enum):
    """Who sent a signal, as far as the kernel's word goes (:func:`sender_of`)."""

    KERNEL = "kernel"  # the terminal (Ctrl-C, hang-up), a timer: the user's
    OUTSIDE = "outside"  # a process outside the run's tree, or the grader itself: obeyed
    RUN = "run"  # a process of the run's tree: ignored, blamed on its candidate
    UNPROVEN = "unproven"  # a siginfo the sender wrote itself, or SIGIO: ignored
    UNNAMED = "unnamed"  # a process of the run found stopped: a stop names no sender, blamed by time


class Stopped(enum.Enum):
    """Which process of the run was found stopped (a stop event's ``stopped``)."""

    FORK_SERVER = "fork server"
    DRIVER = "driver"
    GRADER = "grader"  # the grading process itself, continued by its watchdog (guard.watchdog)
    WORKER = "worker"  # a job's worker: an attack when another job stopped it


@dataclass(frozen=True)
class SignalEvent:
    """A signal the guard ignored, or a process of the run found stopped (``stopped``; signum
    SIGSTOP, no sender). ``lineage``: the sender and its ancestors below the grader, as read when
    it was taken; ``in_flight``: the keys of every job in flight at any moment it may have been
    sent in; ``owner``: the job whose own worker was found stopped (it may stop what is its own)."""

    signum: int
    pid: int
    sender: Sender
    lineage: tuple[int, ...]
    in_flight: tuple[str, ...] = ()
    stopped: Stopped | None = None
    stopped_pid: int = 0
    owner: str | None = None

    @property
    def suspects(self) -> tuple[str, ...]:
        """The jobs it would be an attack by, had they done it."""
        return tuple(key for key in self.in_flight if key != self.owner)

    @property
    def kind(self) -> tuple[int, Stopped | None]:
        """What was done: the signal sent, or the kind of process stopped."""
        return self.signum, self.stopped

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


# Pids this process had the fork server start, and those its drivers reported: a sender among them
# that is already gone (reaped) is still known for the run's.
_RECORDED: set[int] = set()


def remember(pid: int) -> None:
    _RECORDED.add(pid)


def forget(pids) -> None:
    """Once these processes are gone for good (their job ended): a pid reused later is a stranger's."""
    _RECORDED.difference_update(pids)


def _parent(pid: int) -> int | None:
    fields = stat_fields(pid)
    try:
        return int(fields[1]) if fields else None
    except (ValueError, IndexError):
        return None


def lineage(pid: int, root: int) -> tuple[int, ...] | None:
    """``pid`` and its ancestors below ``root``, if ``root`` is one of them; None if it is not or
    ``pid`` is gone (a zombie still counts: its parent is in /proc until it is reaped)."""
    chain = []
    while pid and pid != root and len(chain) < 4096:
        chain.append(pid)
        parent = _parent(pid)
        if parent is None or parent == pid:
            return None
        pid = parent
    return tuple(chain) if pid == root and pid else None


def sender_of(info, *, root: int, grace: float = GRACE) -> tuple[Sender, tuple[int, ...]]:
    """Who sent the signal ``info`` (a ``signal.struct_siginfo``) to ``root``, and its lineage
    below ``root`` when it is one of the run's processes."""
    if info.si_code == SI_KERNEL:
        # The kernel sends SIGIO for a file whose owner (F_SETOWN) a candidate made the grader.
        return (Sender.UNPROVEN, ()) if info.si_signo == signal.SIGIO else (Sender.KERNEL, ())
    if info.si_code not in (SI_USER, SI_TKILL):
        return Sender.UNPROVEN, ()  # the sender filled in si_pid itself (sigqueue), or the kernel did for a file
    if info.si_pid == root:
        return Sender.OUTSIDE, ()  # the grader itself: os.kill(os.getpid(), ...) is meant
    if os.path.exists(f"/proc/{info.si_pid}"):
        chain = lineage(info.si_pid, root)
        return (Sender.RUN, chain) if chain else (Sender.OUTSIDE, ())
    deadline = time.monotonic() + grace
    while info.si_pid not in _RECORDED and time.monotonic() < deadline:
        time.sleep(0.05)
    return (Sender.RUN, (info.si_pid,)) if info.si_pid in _RECORDED else (Sender.OUTSIDE, ())


def describe_signals(events: list[SignalEvent]) -> str:
    """'sent SIGINT and SIGTERM to the grader (from pid 123)': each signal once, in the order of
    their numbers (the kernel delivers pending signals that way, not in the order sent)."""
    names = [event.name for event in sorted({event.signum: event for event in events}.values(),
                                            key=lambda event: event.signum)]
    pids = sorted({event.pid for event in events if event.pid})
    said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    more = f" and {len(pids) - 3} more" if len(pids) > 3 else ""
    source = "" if not pids else f" (from pid {pids[0]})" if len(pids) == 1 else \
        f" (from pids {', '.join(map(str, pids[:3]))}{more})"
    return f"sent {said} to the grader{source}"


def describe_stops(events: list[SignalEvent]) -> str:
    """'stopped the fork server and 2 grading drivers (SIGSTOP), which were continued': each
    process once (a stop of the same one again adds nothing)."""
    pids = {kind: sorted({event.stopped_pid for event in events if event.stopped is kind}) for kind in Stopped}
    one = {Stopped.FORK_SERVER: "the fork server", Stopped.DRIVER: "a grading driver",
           Stopped.WORKER: "a neighbour's worker", Stopped.GRADER: "the grader"}
    many = {Stopped.FORK_SERVER: "{} fork servers", Stopped.DRIVER: "{} grading drivers",
            Stopped.WORKER: "{} neighbours' workers", Stopped.GRADER: "{} graders"}
    parts = [one[kind] if len(found) == 1 else many[kind].format(len(found)) for kind, found in pids.items() if found]
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    continued = "which was continued" if sum(map(len, pids.values())) == 1 else "which were continued"
    return f"stopped {said} (SIGSTOP), {continued}"


def hold_signals() -> None:
    """Block :data:`GUARDED` in this thread, before anything starts a thread that would inherit an
    unblocked mask: the command line's first step. :func:`release_signals` (or the guard) undoes it."""
    if SUPPORTED:
        signal.pthread_sigmask(signal.SIG_BLOCK, GUARDED)


def release_signals() -> None:
    if SUPPORTED:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, GUARDED)


class SignalGuard:
    """The thread that takes :data:`GUARDED` (see the module docstring), on for a ``with`` block.

    Inactive (signals act as before, nothing is ever claimed) off Linux and outside the main
    thread, where Python neither runs signal handlers nor lets them be set."""

    def __init__(self) -> None:
        self.active = SUPPORTED and threading.current_thread() is threading.main_thread()
        self.root = os.getpid()
        self.events: list[SignalEvent] = []
        # Set by whoever runs the jobs: the keys of those in flight at any moment since a time
        # (``time.monotonic()``), e.g. :meth:`fuzz.isolation.pool.pool.Pool.in_flight`.
        self.in_flight: Callable[[float], tuple[str, ...]] = lambda since: ()
        self._stop = threading.Event()
        self._handling = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="lse-fuzz-signals", daemon=True)
        self._watchdog: watchdog.Watchdog | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self._handling.clear()
            info = signal.sigtimedwait(GUARDED, 0.2)
            if info is not None and _filled(info):
                self._handling.set()
                self._handle(info, time.monotonic())

    def _handle(self, info, taken: float) -> None:
        """Judge the signal ``info``, taken at ``taken``: it was sent a moment before, and its
        sender is looked for (up to :data:`GRACE`) after: every job in flight since is named."""
        try:
            sender, chain = sender_of(info, root=self.root)
        except Exception:  # a bug here must not kill the thread: every later signal would stay blocked
            sender, chain = Sender.UNPROVEN, ()
        if sender in (Sender.KERNEL, Sender.OUTSIDE):
            self._obey(info.si_signo)
            return
        try:
            in_flight = tuple(self.in_flight(taken))
        except Exception:  # read while another thread changes it: no job named, no blame by time
            in_flight = ()
        self.add(SignalEvent(info.si_signo, info.si_pid, sender, chain, in_flight))

    def add(self, event: SignalEvent) -> None:
        """Keep ``event`` to be claimed (a stop the pool found: fuzz.isolation.guard.blame), from any thread.
        One equal to an event kept already tells nothing new: a stopper found again and again, twice
        a second, takes no room. Past :data:`MAX_EVENTS` an old event makes room (:meth:`_room`), never
        the new one: the events of a suspect graded again alone, after a batch that filled the list
        (an orphan signalling on each of its hundreds of calls), are what convict it."""
        if not self.active:  # nothing is ever claimed: it would only name suspects to no end
            return
        with self._lock:
            if event in self.events:
                return
            if len(self.events) >= MAX_EVENTS:
                del self.events[self._room()]
            self.events.append(event)

    def _room(self) -> int:
        """The index of the event to forget: the oldest of those alike to a later one (told apart by
        the sender's pid alone, e.g. a double-forked orphan's: the later one names the same jobs
        for the same deed), else the oldest."""
        later: set[tuple] = set()
        oldest_alike = None
        for index in range(len(self.events) - 1, -1, -1):
            event = self.events[index]
            likeness = (event.kind, event.sender, event.in_flight, event.owner)
            if likeness in later:
                oldest_alike = index
            later.add(likeness)
        return 0 if oldest_alike is None else oldest_alike

    def _obey(self, signum: int) -> None:
        """What the signal would have done without the guard."""
        handler = signal.getsignal(signum)
        if callable(handler):  # Python's: KeyboardInterrupt for SIGINT, the run's for SIGTERM
            _thread.interrupt_main(signum)
            with contextlib.suppress(OSError):  # break the main thread's blocking call, if any
                signal.pthread_kill(threading.main_thread().ident, WAKE)
        elif handler != signal.SIG_IGN:  # the default action (end the process), from this thread
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
            signal.raise_signal(signum)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signum})

    def _settle(self, timeout: float = 2.0) -> None:
        """Wait until every guarded signal sent so far has been taken and judged."""
        deadline, quiet = time.monotonic() + timeout, 0
        while quiet < 2 and time.monotonic() < deadline:  # twice: a signal is taken a moment before it is flagged
            busy = signal.sigpending() & GUARDED or self._handling.is_set()
            quiet = 0 if busy else quiet + 1
            time.sleep(0.01)

    def claim(self, key: str | None = None, processes: tuple[int, ...] = ()) -> list[SignalEvent]:
        """The events of one job, taken off the list: the signals whose sender descends from one of
        its ``processes`` (its workers), and the signals and stops of a time when it was the only
        job in flight (but a stop of its own worker: that is its own business). With no ``key``,
        every one (one candidate graded: all were its doing; or, at the end, the stray ones)."""
        if not self.active:
            return []
        self._settle()
        with self._lock:
            mine = [event for event in self.events if key is None or _belongs(event, key, processes)]
            self.events = [event for event in self.events if event not in mine]
        return mine

    def kept(self) -> frozenset[SignalEvent]:
        """The events kept now, for :meth:`names` to tell the later ones from."""
        with self._lock:
            return frozenset(self.events)

    def names(self, key: str, *, besides: frozenset[SignalEvent] = frozenset()) -> bool:
        """Whether an event kept now, but not one of ``besides``, names ``key`` among its suspects."""
        with self._lock:
            return any(key in event.suspects for event in self.events if event not in besides)

    def suspects(self) -> list[str]:
        """The jobs that may have done what no job was tied to (each unclaimed event's jobs in
        flight, but the owner of a worker found stopped), in the order first named: each, run
        again alone, shows whether it was its doing."""
        if not self.active:
            return []
        self._settle()
        with self._lock:
            return list(dict.fromkeys(key for event in self.events for key in event.suspects))

    def suspicion(self) -> Counter[str]:
        """How many of the events no job could be tied to name each job among their suspects (as
        :meth:`suspects`): an attacker is named by each of its attacks, a neighbour only by those
        it ran beside."""
        if not self.active:
            return Counter()
        self._settle()
        with self._lock:
            return Counter(key for event in self.events for key in event.suspects)

    def explained_by(self, key: str, like: Sequence[SignalEvent] | None = None) -> list[SignalEvent]:
        """Take off the list the unclaimed events that name ``key`` among their suspects, once it is
        convicted of an attack on the grading: they need no other culprit. With ``like`` (the
        events it was convicted of), only the events of the same deed: the same signal, or a stop
        of any process of the run (one convicted of signalling the grader explains no stop). A stop
        is one deed whatever it stopped: run again alone, a stopper finds no neighbour's worker to
        stop, so it could never be convicted of that kind, and every neighbour such a stop named
        would be graded again in full."""
        deeds = None if like is None else {event.signum for event in like}
        with self._lock:
            explained = [event for event in self.events
                         if key in event.suspects and (deeds is None or event.signum in deeds)]
            self.events = [event for event in self.events if event not in explained]
        return explained

    def __enter__(self) -> SignalGuard:
        if not self.active:
            return self
        self._previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, GUARDED)
        self._previous_wake = signal.signal(WAKE, _ignore)
        flag = ctypes.c_int(0)
        prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag))
        self._was_subreaper = bool(flag.value)
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        self._since = _ticks_since_boot()
        self._thread.start()
        self._watchdog = watchdog.start_watchdog()  # the grader itself stopped is continued (guard.watchdog)
        if self._watchdog is not None:
            spare(self._watchdog.pid)
        return self

    def __exit__(self, *exc_info) -> None:
        if not self.active:
            return
        if self._watchdog is not None:
            self._watchdog.stop()
        self._stop.set()
        self._thread.join()
        # Signals that came after the thread's last wait are judged here, not let through the
        # unblocked mask (a candidate's last SIGTERM would end the finished run as interrupted);
        # after the state is restored, since obeying one may raise KeyboardInterrupt at once.
        late = []
        while (info := signal.sigtimedwait(GUARDED, 0)) is not None:
            late.append(info)
        # What this process adopted as a subreaper (a candidate's orphans, handed over when a
        # fork server died under them) would outlive the run once it stops being one: killed here,
        # before the caller writes its last report, so nothing of a candidate's can write after it.
        kill_adopted(self._since, keep=set(_SPARED))
        prctl(PR_SET_CHILD_SUBREAPER, int(self._was_subreaper))
        signal.signal(WAKE, self._previous_wake)
        signal.pthread_sigmask(signal.SIG_SETMASK, self._previous_mask)
        for info in late:
            self._handle(info, time.monotonic())


_SI_CODES = frozenset(range(-7, 7)) | {SI_KERNEL}  # <asm-generic/siginfo.h>: SI_DETHREAD..POLL_HUP, SI_KERNEL


def _filled(info) -> bool:
    """Whether ``info`` is a signal's: CPython's ``sigtimedwait``, interrupted (EINTR, as when this
    process is stopped and continued: its watchdog does that) past its timeout, returns a siginfo
    it never filled in (seen: SIGHUP, si_code 1982222704, a made-up si_pid) instead of None."""
    return info.si_code in _SI_CODES


def _belongs(event: SignalEvent, key: str, processes: tuple[int, ...]) -> bool:
    """Whether ``event`` is the doing of the job ``key``, whose workers are ``processes``."""
    if set(event.lineage) & set(processes):
        return True
    return event.in_flight == (key,) and event.owner != key


_SPARED: set[int] = set()  # this process's own fork servers: children it started, not adopted


def spare(pid: int) -> None:
    """``pid`` is a child this process started on purpose (a fork server): never :func:`kill_adopted`."""
    _SPARED.add(pid)


def kill_adopted(since: int, *, keep: set[int]) -> list[int]:
    """Kill (SIGKILL) this process's children started at or after ``since`` (clock ticks since
    boot) other than ``keep`` (the fork servers it started), and everything below them, then reap
    those children; the pids killed. Started during the guard and not started by us: adopted."""
    table: dict[int, tuple[int, int, str]] = {}  # pid -> (parent, start, state)
    for entry in os.listdir("/proc"):
        fields = stat_fields(entry) if entry.isdigit() else None
        try:
            if fields:
                table[int(entry)] = (int(fields[1]), int(fields[19]), fields[0])
        except (ValueError, IndexError):
            continue
    me = os.getpid()
    roots = [pid for pid, (parent, start, state) in table.items()
             if parent == me and pid not in keep and start >= since and state != "Z"]
    below: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        below.setdefault(parent, []).append(pid)
    victims, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        victims.append(pid)
        todo.extend(below.get(pid, ()))
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    for pid in roots:
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.01)
    return victims


def _ticks_since_boot() -> int:
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _ignore(signum, frame) -> None:
    pass
