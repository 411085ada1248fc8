"""Entries the fork server starts in the tests of its Child handle: each takes its channel and arguments."""

import os
import subprocess
import sys
from multiprocessing.connection import Connection


def speak_then_wait(channel_fd: int, args: dict) -> int:
    """Print to both streams, send our pid (and a grandchild's, if asked for one), then wait for
    the parent to close the channel and exit with ``args["code"]``."""
    print(args.get("stdout", ""), flush=True)
    print(args.get("stderr", ""), file=sys.stderr, flush=True)
    pids = [os.getpid()]
    if args.get("grandchild"):
        pids.append(subprocess.Popen(["sleep", "60"]).pid)  # in our process group
    conn = Connection(channel_fd)
    conn.send_bytes(" ".join(map(str, pids)).encode())
    try:
        conn.recv_bytes()
    except EOFError:
        pass
    return int(args.get("code", 0))
