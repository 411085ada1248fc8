"""Job entries for the worker-pool tests: each takes a payload dict and returns a record dict."""

import os
import signal
import time


def echo(payload: dict) -> dict:
    time.sleep(payload.get("hold", 0))
    return {"echo": payload, "pid": os.getpid(), "cwd": os.getcwd(), "secret": os.environ.get("LSE_TEST_SECRET"),
            "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}


def abort(payload: dict) -> dict:
    os.abort()


def sleep(payload: dict) -> dict:
    time.sleep(payload["seconds"])
    return {"slept": payload["seconds"]}


def fail(payload: dict) -> dict:
    raise ValueError(f"job failed on purpose: {payload}")


def lose_the_worker_fork_server(payload: dict) -> dict:
    """What a driver raises when a candidate has killed what its worker fork server starts."""
    from fuzz.isolation.fork_server.client import SPAWN_UNANSWERED

    raise RuntimeError(SPAWN_UNANSWERED)


def kill_fork_server(payload: dict) -> dict:
    """A driver's parent is the fork server every driver and worker is forked from."""
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(5)  # dies with it (parent-death signal) before this returns
    return {"survived": True}


def loads_then_echoes(payload: dict) -> dict:
    """As a candidate that loads at once, then takes ``hold`` seconds."""
    from fuzz.isolation.fork_server.client import tell_loaded

    tell_loaded(os.getpid())
    return echo(payload)


def loads_then_kills_fork_server(payload: dict) -> dict:
    """As a candidate that kills once loaded: ``before`` seconds after it starts its driver tells
    the pool its worker loaded, then, ``after`` seconds later, the fork server dies."""
    from fuzz.isolation.fork_server.client import tell_loaded

    time.sleep(payload.get("before", 0))
    tell_loaded(os.getpid())
    time.sleep(payload.get("after", 0.5))
    return kill_fork_server(payload)


def kill_siblings(payload: dict) -> dict:
    """Kills every other child of the fork server: the drivers beside this one (and itself)."""
    parent = os.getppid()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == parent:
                os.kill(int(entry), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def stop_fork_server(payload: dict) -> dict:
    """A driver's parent is the fork server: stopped once, after ``wait`` seconds; then ``hold``."""
    time.sleep(payload.get("wait", 0))
    os.kill(os.getppid(), signal.SIGSTOP)
    time.sleep(payload.get("hold", 0))
    return {"stopped": os.getppid()}
