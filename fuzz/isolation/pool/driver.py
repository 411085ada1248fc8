"""A grading driver: runs the jobs its pool sends, one at a time, in a child of the fork server.

A job is an entry ``module:function`` called with the job's payload; its record (or its traceback)
goes back to the pool (:class:`fuzz.isolation.pool.pool.Pool`), and so does the pid of every
worker the job has the fork server start, the moment it starts (:func:`report_spawns`): a signal
from that worker's tree is then blamed on the job (:mod:`fuzz.isolation.guard`); and when a worker
has loaded its candidate (:func:`report_loads`), after which the candidate's calls run.
"""

from __future__ import annotations

import importlib
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection

from .. import wire
from ..fork_server.client import report_loads, report_spawns

__all__ = ["driver_main"]


def driver_main(channel_fd: int, args: dict) -> int:
    """Run the jobs the parent sends, one at a time, until it closes the channel."""
    conn = Connection(channel_fd)
    entries: dict[str, Callable[[dict], dict]] = {}
    sending = threading.Lock()  # a notice from a thread of the job never cuts into the reply

    def send(header: dict) -> None:
        with sending:
            wire.send_message(conn, header)

    report_spawns(lambda pid, since: send({"op": "spawned", "pid": pid, "since": since}))
    report_loads(lambda pid: send({"op": "loaded", "pid": pid}))
    while True:
        try:
            header, _ = wire.recv_message(conn)
        except (EOFError, OSError):
            return 0
        if header.get("op") != "job":
            return 0
        entry = header["entry"]
        try:
            if entry not in entries:
                module_name, _, function = entry.partition(":")
                entries[entry] = getattr(importlib.import_module(module_name), function)
            record = entries[entry](header.get("payload") or {})
        except Exception as exc:  # a bug in the job's code: report it, serve the next job
            send({"op": "raised", "type": type(exc).__name__, "traceback": traceback.format_exc()[-20000:]})
            continue
        send({"op": "result", "record": record})
