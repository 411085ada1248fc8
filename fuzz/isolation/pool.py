"""The one worker pool: jobs run in driver processes forked from the fork server.

    with Pool(workers=4, work_dir=tmp) as pool:
        for result in pool.run([Job("a", "fuzz.grading.evaluate:grade_job", payload), ...]):
            result.outcome, result.record          # one outcome per job, in completion order

``lse-fuzz grade``, ``lse-fuzz mutants`` and the campaign scripts all run their jobs here. A job
is an entry ``module:function`` taking a JSON-able payload and returning a JSON-able record; a
driver runs one job at a time and serves the next one after it. Each driver is a child of the
fork server (:mod:`fuzz.isolation.child`): scrubbed environment, its own session and working
directory, stdout to /dev/null and stderr to a log file of its own. Hard limits: a job that runs
past its timeout has its driver killed (with its process group; the candidate workers it started
die with its connection to the fork server) and gets :attr:`Outcome.TIMED_OUT`; a driver that
dies gives its job :attr:`Outcome.CRASHED` or :attr:`Outcome.EXITED`. Either way a new driver
takes its place and the remaining jobs run: one bad job never stops the others. A driver tells
the pool the pid of each worker it starts for its job (:attr:`JobResult.processes`), so that a
signal sent to the grader from a worker's process tree is blamed on its job (:mod:`.signals`).
"""

from __future__ import annotations

import importlib
import math
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path

from ..outcomes import Outcome, describe_exit
from . import signals, wire
from .environment import RUN_ENV, worker_environment, worker_sys_path
from .gpus import VISIBLE
from .zygote import ZYGOTE_ADDRESS_ENV, Zygote, report_spawns, unwatch, watch, zygote_for

__all__ = ["Job", "JobResult", "Pool", "driver_main"]

DRIVER_ENTRY = "fuzz.isolation.pool:driver_main"


@dataclass(frozen=True)
class Job:
    """One unit of work: ``entry`` (``module:function``) is called with ``payload`` in a driver."""

    key: str
    entry: str
    payload: dict = field(default_factory=dict)


@dataclass
class JobResult:
    """How one job ended. ``record`` is what the entry returned (RETURNED only)."""

    job: Job
    outcome: Outcome
    record: dict | None
    seconds: float
    detail: str = ""  # RAISED: the entry's traceback; CRASHED/EXITED/TIMED_OUT: what happened and the log tail
    fork_server_died: bool = False  # its driver died together with the fork server it came from
    killed_fork_server: bool = False  # CRASHED: run alone, the job killed the fork server (it is the culprit)
    killed_its_driver: bool = False  # CRASHED/EXITED: run alone, its driver died again (it is the culprit)
    processes: tuple[int, ...] = ()  # the pids of the workers its driver started for it (to blame signals)


class _Driver:
    def __init__(self, zygote: Zygote, work_dir: Path, index: int, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.log = work_dir / f"driver-{index}.log"
        log = open(self.log, "ab")
        devnull = open(os.devnull, "wb")
        config = {"entry": DRIVER_ENTRY, "cwd": str(work_dir), "env": env, "sys_path": worker_sys_path(),
                  "args": {}}
        try:
            self.pid = zygote.spawn(config, (theirs.fileno(), devnull.fileno(), log.fileno()))
        finally:
            theirs.close()
            log.close()
            devnull.close()
        self.zygote = zygote
        watch(self.pid)  # another job's process may stop it: it is continued (zygote.resume_if_stopped)
        self.gpu = env.get(VISIBLE)
        self.conn = Connection(ours.detach())
        self.job: Job | None = None
        self.started = 0.0
        self.processes: list[int] = []  # the workers started for the job in hand

    def send(self, job: Job) -> None:
        self.job, self.started, self.processes = job, time.monotonic(), []
        wire.send_message(self.conn, {"op": "job", "entry": job.entry, "payload": job.payload})

    def log_tail(self, limit: int = 4000) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> int | None:
        """Kill the driver's process group; its exit code once the fork server has reaped it."""
        unwatch(self.pid)
        signals.forget((self.pid, *self.processes))
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.conn.close()
        return self.zygote.wait_exit(self.pid, timeout=5.0)


class Pool:
    """``workers`` drivers running jobs; see the module docstring.

    ``timeout(job) -> seconds`` is asked again while the job runs, so a caller may tighten it once
    it knows more (the mutation analysis does, once its gate has measured a baseline).
    ``gpus`` (values of ``CUDA_VISIBLE_DEVICES``, see :func:`fuzz.isolation.gpus.spread_over`)
    spreads the drivers over those GPUs: each new driver sees the one with the fewest drivers.
    """

    def __init__(self, workers: int, *, work_dir: Path | str | None = None,
                 timeout: Callable[[Job], float] | float = math.inf, environ: dict[str, str] | None = None,
                 gpus: Sequence[str] = ()) -> None:
        self.workers = max(1, int(workers))
        self._timeout = timeout if callable(timeout) else (lambda job, seconds=float(timeout): seconds)
        self._own_dir = work_dir is None
        # Absolute: drivers start in the fork server's own directory, where a relative one is not.
        self.work_dir = Path(tempfile.mkdtemp(prefix="lse-fuzz-pool-") if work_dir is None else work_dir).resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._env = worker_environment(environ)
        self._gpus = list(gpus)
        self._drivers: list[_Driver] = []
        self._zygote: Zygote | None = None
        self._started = 0

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _new_driver(self) -> _Driver:
        if self._zygote is None or not self._zygote.alive():
            # One fork server serves every run of this process: a run's token goes to its drivers
            # (and so to their workers), not into the fork server's key.
            self._zygote = zygote_for({k: v for k, v in self._env.items() if k != RUN_ENV})
        env = dict(self._env, **{ZYGOTE_ADDRESS_ENV: self._zygote.address})
        if self._gpus:
            # A retired driver's replacement takes its GPU back, so the spread stays even.
            load = {gpu: 0 for gpu in self._gpus}
            for driver in self._drivers:
                load[driver.gpu] = load.get(driver.gpu, 0) + 1
            env[VISIBLE] = min(self._gpus, key=lambda gpu: load[gpu])
        driver = _Driver(self._zygote, self.work_dir, self._started, env)
        self._started += 1
        self._drivers.append(driver)
        return driver

    def _retire(self, driver: _Driver) -> int | None:
        self._drivers.remove(driver)
        return driver.kill()

    def run(self, jobs: Iterable[Job]) -> Iterator[JobResult]:
        """Run ``jobs`` (started in the order given, each taken from the iterable only when a driver
        is free for it) and yield each result as it completes.

        A driver runs trusted code, so one that dies was killed: by the job it ran, or by another
        job's process (one that kills the fork server takes every driver with it, and a candidate
        can signal a sibling driver). Such jobs run again at the end, each alone: an innocent one
        gets its own result, and one whose driver dies again while nothing else ran is the culprit
        (``killed_fork_server`` or ``killed_its_driver``). Closing the iterator early (or Ctrl-C)
        kills the drivers still running.
        """
        casualties: list[Job] = []
        yield from self._run(jobs, self.workers, casualties)
        for job in casualties:
            for result in self._run([job], 1, None):
                if result.fork_server_died:
                    result = replace(result, outcome=Outcome.CRASHED, killed_fork_server=True,
                                     detail="it killed the fork server that starts every driver and worker "
                                            "(run again alone, it did so again)\n" + result.detail)
                elif result.outcome in (Outcome.CRASHED, Outcome.EXITED):
                    result = replace(result, killed_its_driver=True,
                                     detail="its grading driver died while it ran, also when it ran again alone: "
                                            "something it does kills the process that grades it\n" + result.detail)
                yield result

    def _run(self, jobs: Iterable[Job], workers: int, casualties: list[Job] | None) -> Iterator[JobResult]:
        """The loop of :meth:`run` with at most ``workers`` drivers. A job whose driver died goes
        to ``casualties`` instead of being yielded (when that is a list); when it is None, the job
        is yielded with ``fork_server_died`` saying whether its fork server died too."""
        pending = iter(jobs)
        upcoming = next(pending, None)
        idle: list[_Driver] = [d for d in self._drivers if d.job is None]
        busy: dict[Connection, _Driver] = {}
        fresh_failures = 0
        try:
            while upcoming is not None or busy:
                while upcoming is not None and (idle or len(busy) < workers):
                    reused = bool(idle)
                    driver = idle.pop() if idle else self._new_driver()
                    try:
                        driver.send(upcoming)
                    except OSError:
                        # It died while idle (another job's process killed it, or its fork server
                        # died): the job never reached it, so it goes to the next driver, blameless.
                        # A driver started just now for it is retired the same way, once.
                        driver.job = None
                        self._retire(driver)
                        if not reused:
                            fresh_failures += 1
                            if fresh_failures > 2:
                                raise RuntimeError("lse-fuzz: three new grading drivers in a row died before "
                                                   "their first job reached them; something on this machine "
                                                   "kills the processes the fork server starts") from None
                        continue
                    fresh_failures = 0
                    busy[driver.conn] = driver
                    upcoming = next(pending, None)
                for conn in wait(list(busy), timeout=0.2):
                    result = self._receive(busy[conn])
                    if result is None:
                        continue  # a notice: the job runs on
                    driver = busy.pop(conn)
                    signals.forget(result.processes)  # its workers are gone: their pids may be reused
                    if result.outcome in (Outcome.RETURNED, Outcome.RAISED):
                        driver.job = None
                        idle.append(driver)
                    else:  # the driver died
                        if casualties is not None:
                            casualties.append(result.job)
                            continue
                        # Its own fork server (a dead one is replaced by the next driver started).
                        result = replace(result, fork_server_died=not driver.zygote.alive())
                    yield result
                now = time.monotonic()
                for conn, driver in list(busy.items()):
                    limit = self._timeout(driver.job)
                    if now - driver.started > limit:
                        del busy[conn]
                        job, seconds, tail = driver.job, now - driver.started, driver.log_tail()
                        self._retire(driver)
                        yield JobResult(job, Outcome.TIMED_OUT, None, seconds,
                                        f"no result within the time limit of {limit:g} s: its driver was killed"
                                        + _tail(tail), processes=tuple(driver.processes))
        finally:
            for driver in list(busy.values()):
                self._retire(driver)

    def _receive(self, driver: _Driver) -> JobResult | None:
        """How the driver's job ended, or None for a notice (the pid of a worker it started)."""
        job = driver.job
        assert job is not None
        processes = tuple(driver.processes)
        try:
            header, _ = wire.recv_message(driver.conn)
        except (EOFError, OSError, ValueError):
            seconds, tail = time.monotonic() - driver.started, driver.log_tail()
            code = self._retire(driver)
            outcome = Outcome.CRASHED if code is None or code < 0 else Outcome.EXITED
            return JobResult(job, outcome, None, seconds, f"its driver {describe_exit(code)}" + _tail(tail),
                             processes=processes)
        seconds = time.monotonic() - driver.started
        if header.get("op") == "spawned":
            driver.processes.append(int(header["pid"]))
            signals.remember(driver.processes[-1])
            return None
        if header.get("op") == "raised":
            return JobResult(job, Outcome.RAISED, None, seconds, str(header.get("traceback", "")), processes=processes)
        return JobResult(job, Outcome.RETURNED, header.get("record"), seconds, processes=processes)

    def in_flight(self) -> tuple[str, ...]:
        """The keys of the jobs running now (read from another thread too: a snapshot)."""
        return tuple(driver.job.key for driver in list(self._drivers) if driver.job is not None)

    def close(self) -> None:
        """Kill every driver (and so the workers they started)."""
        for driver in list(self._drivers):
            self._retire(driver)
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)


def _tail(text: str, lines: int = 12) -> str:
    text = (text or "").strip()
    if not text:
        return ""
    return "\n  stderr (last lines):\n" + "\n".join("    " + line for line in text.splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# The driver (runs in a child of the fork server)


def driver_main(channel_fd: int, args: dict) -> int:
    """Run the jobs the parent sends, one at a time, until it closes the channel."""
    conn = Connection(channel_fd)
    entries: dict[str, Callable[[dict], dict]] = {}
    sending = threading.Lock()  # a notice from a thread of the job never cuts into the reply

    def send(header: dict) -> None:
        with sending:
            wire.send_message(conn, header)

    report_spawns(lambda pid: send({"op": "spawned", "pid": pid}))
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
