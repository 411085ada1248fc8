"""The parent side of the fork server: start it (or connect to a parent's), spawn children, reap them.

One fork server per environment per process (:func:`zygote_for`); a grading driver connects to
its parent's (its address is in ``LSE_FUZZ_ZYGOTE``) so every worker of a run comes from one place.
The child side is :mod:`fuzz.isolation.child`.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from . import signals
from .child import MAX_SPAWN_MESSAGE

DEFAULT_START_TIMEOUT = 120.0
WAIT_SLICE = 0.5  # seconds between the resumer's checks that no watched process is stopped

# The fork server imports only this package's child module (and torch, triton), never the kernels.
_BOOT = "import sys; from fuzz.isolation.child import zygote_main; zygote_main(int(sys.argv[1]))"


class Zygote:
    """A connection to a fork server; owns it when this process started it."""

    def __init__(self, sock: socket.socket, *, process: subprocess.Popen | None = None,
                 address: str | None = None, log: Path | None = None, since: float | None = None) -> None:
        self.sock = sock
        self.process = process
        self.address = address
        self.log = log
        self._exits: dict[int, int] = {}
        self.pid: int | None = None if process is None else process.pid
        if self.pid is not None:
            signals.spare(self.pid)  # a child started on purpose, not one adopted from a candidate
        watch(self.pid, since)  # (None for a connection: watched once its pid is known)
        self._replies: list[dict] = []
        # One request and its reply at a time: threads of one process share this connection (a
        # check runs its first part here while a pool's thread starts the drivers of the others).
        self._lock = threading.Lock()

    @classmethod
    def launch(cls, env: dict[str, str]) -> Zygote:
        """Start a fork server and return at once; :meth:`ready` waits until it serves."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        home = Path(tempfile.mkdtemp(prefix="lse-fuzz-zygote-home-"))
        log = home / "zygote.log"
        since = time.monotonic()  # it cannot have been stopped before it existed
        with open(log, "wb") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), env=env, cwd=home, stdin=subprocess.DEVNULL,
                stdout=log_file, stderr=log_file, start_new_session=True,
            )
        theirs.close()
        return cls(ours, process=process, log=log, since=since)

    def ready(self, timeout: float = DEFAULT_START_TIMEOUT) -> Zygote:
        """This fork server once it serves (its imports done); RuntimeError if it never does."""
        if self.address is not None:
            return self
        try:
            hello = self._read(timeout)
        except EOFError:
            hello = None
        if hello is None or hello.get("op") != "hello":
            self.process.kill()
            text = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"the worker fork server did not start: {text}")
        self.address = hello["address"]
        return self

    @classmethod
    def connect(cls, address: str) -> Zygote:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect(address)
        zygote = cls(sock, address=address)
        try:  # the server's pid, from the kernel: to continue it if a candidate stops it
            zygote.pid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                              struct.calcsize("3i")))[0]
        except OSError:
            pass
        if not resumed_by_pool():  # in a pool's driver the pool's process continues it (and tells of it)
            watch(zygote.pid)
        return zygote

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
        if len(message) > MAX_SPAWN_MESSAGE:
            raise RuntimeError(f"a worker's configuration is {len(message)} bytes, more than "
                               f"{MAX_SPAWN_MESSAGE}: is the environment unusually large?")
        since = time.monotonic()  # before it existed: nothing can have stopped it earlier
        with self._lock:
            pid = self._spawn(message, fds, timeout)
        signals.remember(pid)  # a signal from it is the run's, even once it is gone
        for listener in _SPAWN_LISTENERS:
            listener(pid, since)
        return pid

    def _spawn(self, message: bytes, fds: tuple[int, int, int], timeout: float) -> int:
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
        with self._lock:
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
        unwatch(self.pid)
        try:
            self.sock.close()
        finally:
            if self.process is not None:
                if self.address is None:  # started early and never used: still importing, no need to wait
                    self.process.kill()
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                if self.log is not None:
                    shutil.rmtree(self.log.parent, ignore_errors=True)


def resume_if_stopped(pid: int | None) -> bool:
    """Continue ``pid`` if it is stopped (SIGSTOP, SIGTSTP, ...); True if it was.

    Every process of a run shares one user with the candidates, so a candidate can stop any of
    them: the fork server, a driver grading a neighbour, a neighbour's worker. Each process that
    starts or connects to one :func:`watch`es it, so that a stop costs a moment, not a hang;
    under a pool, its process watches them all (:func:`resumed_by_pool`), to blame the stops.
    """
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state not in ("T", "t"):
        return False
    try:
        os.kill(pid, signal.SIGCONT)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class _Resumer:
    """A daemon thread that continues every watched process it finds stopped, twice a second.

    A thread rather than checks where we wait: a process stopped halfway through sending a
    message leaves its reader blocked inside the read, where no check runs.

    Each stop it finds is told to the listeners (:func:`report_stops`) with the window it happened
    in: SIGSTOP names no sender, so when it happened is all there is to tell who sent it. The
    window opens when the process was last seen running (or, for a process not checked yet, at
    the time its watcher gave: before it existed) and closes once it has been continued.
    """

    def __init__(self) -> None:
        self._pids: dict[int, int] = {}  # pid -> how many watch it
        self._clear: dict[int, float] = {}  # pid -> a time since which any stop of it is still to be found
        self._listeners: list[Callable[[int, float, float], None]] = []
        self._lock = threading.Lock()
        self._sweeping = threading.Lock()  # one sweep at a time: a stop is found, and told, once
        self._thread: threading.Thread | None = None

    def watch(self, pid: int | None, since: float | None = None) -> None:
        if pid is None:
            return
        since = time.monotonic() if since is None else since
        with self._lock:
            self._pids[pid] = self._pids.get(pid, 0) + 1
            self._clear[pid] = min(self._clear.get(pid, since), since)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lse-fuzz-resumer", daemon=True)
                self._thread.start()

    def unwatch(self, pid: int | None) -> None:
        with self._lock:
            if pid in self._pids:
                self._pids[pid] -= 1
                if not self._pids[pid]:
                    del self._pids[pid]
                    del self._clear[pid]

    def listen(self, listener: Callable[[int, float, float], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def unlisten(self, listener: Callable[[int, float, float], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def sweep(self) -> None:
        """Continue every watched process found stopped now, and tell the listeners."""
        with self._sweeping:
            with self._lock:
                watched = dict(self._clear)
            for pid, since in watched.items():
                checked = time.monotonic()  # it is read after this: a later stop is found next time
                stopped = resume_if_stopped(pid)
                found = time.monotonic()
                with self._lock:
                    if pid in self._clear:
                        self._clear[pid] = checked
                    listeners = list(self._listeners) if stopped else []
                for listener in listeners:
                    try:
                        listener(pid, since, found)
                    except Exception:  # a listener's bug must not end the thread: nothing would be continued
                        pass

    def _run(self) -> None:
        while True:
            time.sleep(WAIT_SLICE)
            self.sweep()


_RESUMER = _Resumer()
watch = _RESUMER.watch
unwatch = _RESUMER.unwatch
sweep = _RESUMER.sweep
report_stops = _RESUMER.listen
"""Call ``listener(pid, since, found)`` for every watched process found stopped and continued:
it was stopped between ``since`` and ``found`` (``time.monotonic()``, system-wide on Linux)."""
stop_reporting = _RESUMER.unlisten

RESUMED_BY_POOL_ENV = "LSE_FUZZ_RESUMED_BY_POOL"
"""Set in a pool's drivers: the pool's process continues the fork server and the workers they
start (it watches every pid they report), and hears of every stop, which is how a stop is blamed
(fuzz.isolation.pool). A driver that continued one itself first would hide it from the pool."""


def resumed_by_pool() -> bool:
    """True in a pool's driver: whoever watches a process here leaves it to the pool's process."""
    return bool(os.environ.get(RESUMED_BY_POOL_ENV))


_SPAWN_LISTENERS: list[Callable[[int, float], None]] = []


def report_spawns(listener: Callable[[int, float], None]) -> None:
    """Call ``listener(pid, since)`` for every process this process has a fork server start,
    ``since`` a ``time.monotonic()`` from before it existed (a grading driver tells the pool the
    pids of its job's workers: see fuzz.isolation.signals and fuzz.isolation.pool)."""
    _SPAWN_LISTENERS.append(listener)


_ZYGOTES: dict[str, Zygote] = {}
_ZYGOTES_LOCK = threading.Lock()
ZYGOTE_ADDRESS_ENV = "LSE_FUZZ_ZYGOTE"
"""Set in grading drivers: the address of their parent's zygote, which they share."""


def zygote_for(env: dict[str, str]) -> Zygote:
    """This process's zygote for ``env`` (started on first use); a grading driver connects to
    its parent's zygote instead (its address is in LSE_FUZZ_ZYGOTE)."""
    address = os.environ.get(ZYGOTE_ADDRESS_ENV)
    key = address or json.dumps(sorted(env.items()))
    with _ZYGOTES_LOCK:
        zygote = _ZYGOTES.get(key)
        if zygote is None or not zygote.alive():
            zygote = Zygote.connect(address) if address else Zygote.launch(env)
            _ZYGOTES[key] = zygote
        try:
            return zygote.ready()
        except RuntimeError:
            del _ZYGOTES[key]
            raise


def prestart(env: dict[str, str]) -> None:
    """Start the fork server :func:`zygote_for` ``(env)`` will return, now, without waiting for it:
    its imports (torch, Triton, seconds of them) then run while the caller does its own. One that
    is never asked for is stopped at exit. Nothing happens in a grading driver (it connects to its
    parent's) or when one for ``env`` exists already."""
    if os.environ.get(ZYGOTE_ADDRESS_ENV):
        return
    key = json.dumps(sorted(env.items()))
    with _ZYGOTES_LOCK:
        if key not in _ZYGOTES:
            _ZYGOTES[key] = Zygote.launch(env)


@atexit.register
def _close_zygotes() -> None:
    for zygote in _ZYGOTES.values():
        try:
            zygote.close()
        except Exception:
            pass
    _ZYGOTES.clear()
