"""The parent side of the fork server: start it (or connect to a parent's), spawn children, reap them.

One fork server per environment per process (:func:`zygote_for`); a grading driver connects to
its parent's (its address is in ``LSE_FUZZ_ZYGOTE``) so every worker of a run comes from one place.
The server side is :mod:`fuzz.isolation.fork_server.server`; a child it started is a
:class:`fuzz.isolation.fork_server.child.Child`.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..guard import signals
from ..guard.stops import resumed_by_pool, unwatch, watch
from .server import MAX_SPAWN_MESSAGE

DEFAULT_START_TIMEOUT = 120.0

# The fork server imports only its server module (and torch, triton), never the kernels. Once it
# has served, it leaves without the interpreter's shutdown: what it preloaded is frozen (out of the
# collector's sight for its children), and nanobind would report what a shutdown left as leaks.
_BOOT = ("import os, sys; from fuzz.isolation.fork_server.server import zygote_main; zygote_main(int(sys.argv[1])); "
         "sys.stdout.flush(); sys.stderr.flush(); os._exit(0)")


SPAWN_UNANSWERED = "the worker fork server did not answer a spawn request"
"""What a driver raises when its fork server stops answering (something killed what it starts)."""

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
        try:
            socket.send_fds(self.sock, [message], list(fds))
        except OSError:  # it died since it was last seen alive (a candidate killed it): as if unanswered
            raise RuntimeError(SPAWN_UNANSWERED) from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._read(max(0.0, deadline - time.monotonic()))
            except EOFError:
                message = None
            if message is None:
                raise RuntimeError(SPAWN_UNANSWERED)
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


_SPAWN_LISTENERS: list[Callable[[int, float], None]] = []


def report_spawns(listener: Callable[[int, float], None]) -> None:
    """Call ``listener(pid, since)`` for every process this process has a fork server start,
    ``since`` a ``time.monotonic()`` from before it existed (a grading driver tells the pool the
    pids of its job's workers: see fuzz.isolation.guard and fuzz.isolation.pool)."""
    _SPAWN_LISTENERS.append(listener)


_LOAD_LISTENERS: list[Callable[[int], None]] = []


def report_loads(listener: Callable[[int], None]) -> None:
    """Call ``listener(pid)`` when a worker this process started has loaded its candidate
    (:func:`tell_loaded`): a grading driver tells its pool, which then knows which of its jobs run a
    candidate's code and since when (fuzz.isolation.pool.casualties)."""
    _LOAD_LISTENERS.append(listener)


def tell_loaded(pid: int | None) -> None:
    """The worker ``pid`` has loaded its candidate: its calls come next."""
    for listener in _LOAD_LISTENERS:
        listener(pid)


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
