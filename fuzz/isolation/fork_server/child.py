"""One process the fork server started for this one: spawn it, talk to it, read its log, kill it, wait.

Every child (a grading driver of the pool, a candidate worker of the proxy) is started the same
way: a socket pair for its channel, its stdout and stderr to files (or /dev/null), a config the
fork server reads (:mod:`fuzz.isolation.fork_server.server`), and its exit code from the fork
server, which reaped it (:meth:`fuzz.isolation.fork_server.client.Zygote.wait_exit`).
"""

from __future__ import annotations

import os
import socket
import time
from multiprocessing.connection import Connection
from pathlib import Path

from ..processes import kill_group
from .client import Zygote

__all__ = ["Child"]


class Child:
    """A child of the fork server ``server``: ``pid``, its channel ``conn`` (a Connection over a
    socket pair) and the files its stdout and stderr go to. ``since``: a ``time.monotonic()``
    from before it existed (nothing can have stopped it earlier)."""

    def __init__(self, server: Zygote, pid: int, conn: Connection, *, stdout: Path | None, stderr: Path,
                 since: float) -> None:
        self.server, self.pid, self.conn = server, pid, conn
        self.stdout, self.stderr, self.since = stdout, stderr, since

    @classmethod
    def spawn(cls, server: Zygote, entry: str, args: dict, *, cwd: Path | str, env: dict[str, str],
              sys_path: list[str], stderr: Path, stdout: Path | None = None,
              rlimits: dict[str, int] | None = None) -> Child:
        """Have ``server`` start ``entry`` (``module:function``, called with the channel and ``args``)
        in ``cwd`` with exactly ``env``, ``sys_path`` first on its import path and ``rlimits``
        (``RLIMIT_*`` name -> bytes); its stdout is appended to ``stdout`` (None: /dev/null), its
        stderr to ``stderr``."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        config = {"entry": entry, "cwd": str(cwd), "env": env, "sys_path": sys_path, "args": args}
        if rlimits:
            config["rlimits"] = rlimits
        since = time.monotonic()
        try:
            with open(stdout if stdout is not None else os.devnull, "ab") as out, open(stderr, "ab") as err:
                pid = server.spawn(config, (theirs.fileno(), out.fileno(), err.fileno()))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return cls(server, pid, Connection(ours.detach()), stdout=stdout, stderr=stderr, since=since)

    def tail(self, limit: int = 4000) -> str:
        """The last ``limit`` bytes it wrote to stderr, as text ("" when there are none to read)."""
        try:
            with open(self.stderr, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL it and its process group (what it started and did not take out of it)."""
        kill_group(self.pid)

    def wait(self, timeout: float = 5.0) -> int | None:
        """Its exit code (negative: the signal) once the fork server reaped it; None if that takes
        longer than ``timeout`` seconds or the fork server is gone."""
        return self.server.wait_exit(self.pid, timeout=timeout)

    def close(self) -> None:
        """Close our end of its channel (it reads end of file)."""
        self.conn.close()
