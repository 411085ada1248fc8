"""The one worker pool: jobs run in driver processes forked from the fork server.

    with Pool(workers=4, work_dir=tmp) as pool:
        for result in pool.run([Job("a", "fuzz.grading.evaluate:grade_job", payload), ...]):
            result.outcome, result.record          # one outcome per job, in completion order

``lse-fuzz grade``, ``lse-fuzz mutants``, ``lse-fuzz mutate`` and the campaign scripts all run their jobs here. A job
is an entry ``module:function`` taking a JSON-able payload and returning a JSON-able record; a
driver (:mod:`.driver`) runs one job at a time and serves the next one after it. Each driver is a
child of the fork server (:class:`~fuzz.isolation.fork_server.child.Child`): scrubbed environment,
its own session and working directory, stdout to /dev/null and stderr to a log file of its own. Hard limits: a job that runs
past its timeout has its driver killed (with its process group; the candidate workers it started
die with its connection to the fork server) and gets :attr:`Outcome.TIMEOUT`; a driver that
dies gives its job :attr:`Outcome.CRASHED` or :attr:`Outcome.EXITED`. Either way a new driver
takes its place and the remaining jobs run: one bad job never stops the others. A driver tells
the pool the pid of each worker it starts for its job (:attr:`JobResult.processes`), so that a
signal sent to the grader from a worker's process tree is blamed on its job
(:mod:`fuzz.isolation.guard.signals`).

A job's process can also stop (SIGSTOP) the fork server, a driver or another job's worker. The
pool's process continues them all (the drivers leave it to the pool: ``RESUMED_BY_POOL_ENV``), so
it hears of every stop, and hands each on (:attr:`Pool.report_stop`) as an event naming the jobs
in flight then (:mod:`fuzz.isolation.guard.blame`).
"""

from __future__ import annotations

import contextlib
import math
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path

from ...outcomes import Outcome, describe_exit
from .. import wire
from ..environment import fork_server_environment, worker_environment, worker_sys_path
from ..fork_server.child import Child
from ..fork_server.client import SPAWN_UNANSWERED, ZYGOTE_ADDRESS_ENV, Zygote, zygote_for
from ..guard import signals
from ..guard.blame import LINGER, StopBlame
from ..guard.signals import SignalEvent, Stopped
from ..guard.stops import RESUMED_BY_POOL_ENV, sweep, unwatch, watch
from .casualties import Casualty, Triage
from .gpus import VISIBLE
from .job import Job
from .timeline import note_event

__all__ = ["Job", "JobResult", "Pool"]

DRIVER_ENTRY = "fuzz.isolation.pool.driver:driver_main"


@dataclass
class JobResult:
    """How one job ended. ``record`` is what the entry returned (RETURNED only)."""

    job: Job
    outcome: Outcome
    record: dict | None
    seconds: float
    detail: str = ""  # RAISED: the entry's traceback; CRASHED/EXITED/TIMEOUT: what happened and the log tail
    fork_server_died: bool = False  # its driver died together with the fork server it came from
    killed_fork_server: bool = False  # CRASHED: run alone, the job killed the fork server (it is the culprit)
    killed_its_driver: bool = False  # CRASHED/EXITED: run alone, its driver died again (it is the culprit)
    processes: tuple[int, ...] = ()  # the pids of the workers its driver started for it (to blame signals)


class _Driver:
    """A grading driver (:func:`.driver.driver_main` in a child of the fork server) and the job in hand."""

    def __init__(self, server: Zygote, work_dir: Path, index: int, env: dict[str, str]) -> None:
        self.child = Child.spawn(server, DRIVER_ENTRY, {}, cwd=work_dir, env=env, sys_path=worker_sys_path(),
                                 stderr=work_dir / f"driver-{index}.log")
        self.pid, self.conn = self.child.pid, self.child.conn
        watch(self.pid, self.child.since)  # another job's process may stop it: it is continued (guard.stops)
        self.gpu = env.get(VISIBLE)
        self.job: Job | None = None
        self.started = 0.0
        self.processes: list[int] = []  # the workers started for the job in hand
        self.loaded: float | None = None  # when its first worker had loaded the job's candidate

    def send(self, job: Job) -> None:
        self.job, self.started, self.processes, self.loaded = job, time.monotonic(), [], None
        wire.send_message(self.conn, {"op": "job", "entry": job.entry, "payload": job.payload})

    def kill(self) -> int | None:
        """Kill the driver's process group; its exit code once the fork server has reaped it."""
        unwatch(self.pid)
        signals.forget((self.pid, *self.processes))
        self.child.kill()
        self.child.close()
        return self.child.wait(timeout=5.0)


class Pool:
    """``workers`` drivers running jobs; see the module docstring.

    ``timeout(job) -> seconds`` is asked again while the job runs, so a caller may tighten it once
    it knows more (the mutation analysis does, once its gate has measured a baseline).
    ``gpus`` (values of ``CUDA_VISIBLE_DEVICES``, see :func:`fuzz.isolation.pool.gpus.spread_over`)
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
        self._blame = StopBlame()  # who could have stopped a process of the pool
        # Asked of each job in flight while it runs: True kills its driver at once, as a timeout
        # would (a short run alone that has shown an attack already: what it does next decides nothing).
        self.cut: Callable[[Job], bool] | None = None

    @property
    def report_stop(self) -> Callable[[SignalEvent], None] | None:
        """Called with an event for every process of the pool found stopped (and continued),
        naming the jobs in flight then (:class:`fuzz.isolation.guard.blame.StopBlame`)."""
        return self._blame.report

    @report_stop.setter
    def report_stop(self, report: Callable[[SignalEvent], None] | None) -> None:
        self._blame.report = report

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _new_driver(self, *, again: bool = True) -> _Driver:
        if self._zygote is None or not self._zygote.alive():
            # One fork server serves every run of this process: a run's token goes to its drivers
            # (and so to their workers), not into the fork server's key.
            self._zygote = zygote_for(fork_server_environment(self._env))
            note_event("fork_server", pid=self._zygote.pid)
            if self._zygote.pid is not None:
                self._blame.track(self._zygote.pid, Stopped.FORK_SERVER)
        env = dict(self._env, **{ZYGOTE_ADDRESS_ENV: self._zygote.address, RESUMED_BY_POOL_ENV: "1"})
        if self._gpus:
            # A retired driver's replacement takes its GPU back, so the spread stays even.
            load = {gpu: 0 for gpu in self._gpus}
            for driver in self._drivers:
                load[driver.gpu] = load.get(driver.gpu, 0) + 1
            env[VISIBLE] = min(self._gpus, key=lambda gpu: load[gpu])
        try:
            driver = _Driver(self._zygote, self.work_dir, self._started, env)
        except RuntimeError:
            if not again or self._zygote.process is None:
                raise
            # The fork server died after the check above (a candidate that kills it, still dying,
            # passed it alive): once it is gone, a new one is started and asked once more.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._zygote.process.wait(timeout=10)
            return self._new_driver(again=False)
        self._started += 1
        self._drivers.append(driver)
        self._blame.track(driver.pid, Stopped.DRIVER)
        return driver

    def _retire(self, driver: _Driver) -> int | None:
        self._drivers.remove(driver)
        self._blame.untrack(driver.pid)
        return driver.kill()

    def _handed(self, driver: _Driver, job: Job) -> bool:
        """Hand ``job`` to ``driver``; False if the driver is gone (the job never reached it)."""
        self._blame.handed(job.key)
        try:
            driver.send(job)
        except OSError:
            self._blame.over(job.key, ())
            return False
        note_event("start", key=job.key, driver=driver.pid)
        return True

    def run(self, jobs: Iterable[Job]) -> Iterator[JobResult]:
        """Run ``jobs`` (started in the order given, each taken from the iterable only when a driver
        is free for it) and yield each result as it completes.

        A driver runs trusted code, so one that dies was killed: by the job it ran, or by another
        job's process (one that kills the fork server takes every driver with it, and a candidate
        can signal a sibling driver). Of the jobs of one death, one, the likeliest culprit, is held
        to run again alone at the end; the others run again at once, beside the rest
        (:mod:`.casualties`). Held ones run the likeliest first. One whose driver dies
        again while nothing else ran is the culprit (``killed_fork_server`` or
        ``killed_its_driver``), and what it was in flight for needs no other culprit: the held jobs
        that died beside it run again together, as jobs of the pool, not each alone. An innocent
        one run alone gets its own result. Closing the iterator early (or Ctrl-C) kills the
        drivers still running.
        """
        triage = Triage()
        casualties = triage.held
        yield from self._run(jobs, self.workers, triage)
        while casualties:
            cleared = [c for c in casualties if c.cleared]
            if cleared:
                for casualty in cleared:
                    casualties.remove(casualty)
                yield from self._run([c.job for c in cleared], self.workers, triage)
                continue
            suspect = min(casualties, key=lambda c: c.likeliness)
            casualties.remove(suspect)
            for result in self._run([suspect.job], 1, None):
                if result.fork_server_died:
                    result = replace(result, outcome=Outcome.CRASHED, killed_fork_server=True,
                                     detail="it killed the fork server that starts every driver and worker "
                                            "(run again alone, it did so again)\n" + result.detail)
                elif result.outcome in (Outcome.CRASHED, Outcome.EXITED):
                    result = replace(result, killed_its_driver=True,
                                     detail="its grading driver died while it ran, also when it ran again alone: "
                                            "something it does kills the process that grades it\n" + result.detail)
                yield result
                if result.killed_fork_server or result.killed_its_driver:
                    # The deaths it was in flight for were its doing.
                    casualties[:] = [replace(c, cleared=True) if suspect.job.key in c.beside else c
                                     for c in casualties]

    def _run(self, jobs: Iterable[Job], workers: int, casualties: Triage | None) -> Iterator[JobResult]:
        """The loop of :meth:`run` with at most ``workers`` drivers. A job whose driver died goes
        to ``casualties`` instead of being yielded (when given), which hands some back to run again
        here; when it is None, the job is yielded with ``fork_server_died`` saying whether its fork
        server died too."""
        pending = iter(jobs)

        def take() -> Job | None:  # a casualty handed back first: it had started before the rest
            return (casualties.again() if casualties is not None else None) or next(pending, None)

        upcoming = take()
        idle: list[_Driver] = [d for d in self._drivers if d.job is None]
        busy: dict[Connection, _Driver] = {}
        fresh_failures = 0
        try:
            while upcoming is not None or busy or (casualties is not None and casualties.waiting):
                if casualties is not None:
                    casualties.settle(busy=bool(busy))
                    upcoming = upcoming or take()
                while upcoming is not None and (idle or len(busy) < workers):
                    reused = bool(idle)
                    driver = idle.pop() if idle else self._new_driver()
                    if not self._handed(driver, upcoming):
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
                    upcoming = take()
                for conn in wait(list(busy), timeout=0.2):
                    result = self._receive(busy[conn])
                    if result is None:
                        continue  # a notice: the job runs on
                    driver = busy.pop(conn)
                    note_event("end", key=result.job.key, outcome=result.outcome.name, seconds=round(result.seconds, 3))
                    self._blame.over(result.job.key, result.processes)
                    signals.forget(result.processes)  # its workers are gone: their pids may be reused
                    if result.outcome in (Outcome.RETURNED, Outcome.RAISED):
                        driver.job = None
                        idle.append(driver)
                    else:  # the driver died
                        if casualties is not None:
                            # Beside it: every job in flight now or a moment ago (the drivers of one
                            # death are found one after another), itself included.
                            beside = frozenset(self.in_flight(time.monotonic() - LINGER))
                            casualties.found(Casualty(result.job, beside, driver.started, driver.loaded))
                            continue
                        # Its own fork server (a dead one is replaced by the next driver started).
                        result = replace(result, fork_server_died=not driver.child.server.alive())
                    yield result
                now = time.monotonic()
                for conn, driver in list(busy.items()):
                    limit = self._timeout(driver.job)
                    cut = self.cut is not None and self.cut(driver.job)
                    if now - driver.started > limit or cut:
                        del busy[conn]
                        job, seconds, tail = driver.job, now - driver.started, driver.child.tail()
                        self._retire(driver)
                        self._blame.over(job.key, driver.processes)
                        note_event("cut", key=job.key, seconds=round(seconds, 3), limit=not cut)
                        yield JobResult(job, Outcome.TIMEOUT, None, seconds,
                                        ("cut short: its driver was killed once the run had shown what it was for" if cut
                                         else f"no result within the time limit of {limit:g} s: its driver was killed")
                                        + _tail(tail), processes=tuple(driver.processes))
        finally:
            for driver in list(busy.values()):
                self._retire(driver)
                self._blame.over(driver.job.key, driver.processes)

    def _receive(self, driver: _Driver) -> JobResult | None:
        """How the driver's job ended, or None for a notice (the pid of a worker it started)."""
        job = driver.job
        assert job is not None
        processes = tuple(driver.processes)
        try:
            header, _ = wire.recv_message(driver.conn)
        except (EOFError, OSError, ValueError):
            seconds, tail = time.monotonic() - driver.started, driver.child.tail()
            code = self._retire(driver)
            outcome = Outcome.CRASHED if code is None or code < 0 else Outcome.EXITED
            return JobResult(job, outcome, None, seconds, f"its driver {describe_exit(code)}" + _tail(tail),
                             processes=processes)
        seconds = time.monotonic() - driver.started
        if header.get("op") == "spawned":
            self._spawned(driver, job, int(header["pid"]), header.get("since"))
            return None
        if header.get("op") == "loaded":
            driver.loaded = driver.loaded or time.monotonic()
            note_event("loaded", key=job.key)
            return None
        if header.get("op") == "raised":
            trace = str(header.get("traceback", ""))
            if SPAWN_UNANSWERED in trace:
                # Its worker fork server was broken under it (a candidate can kill what that server
                # starts): the driver is as good as dead, and its job a casualty like a driver's death.
                code = self._retire(driver)
                return JobResult(job, Outcome.CRASHED, None, seconds,
                                 f"its driver's worker fork server stopped answering; its driver {describe_exit(code)}"
                                 f"\n{trace}", processes=processes)
            return JobResult(job, Outcome.RAISED, None, seconds, trace, processes=processes)
        return JobResult(job, Outcome.RETURNED, header.get("record"), seconds, processes=processes)

    def _spawned(self, driver: _Driver, job: Job, pid: int, since: float | None) -> None:
        """The driver of ``job`` started the worker ``pid``: a signal from it is the job's, and this
        process continues it when stopped (the driver leaves that to the pool)."""
        driver.processes.append(pid)
        signals.remember(pid)
        # Not before its job started, whatever the driver said; nor later than now.
        if not isinstance(since, (int, float)):
            since = driver.started
        self._blame.worker_started(pid, job.key, min(max(since, driver.started), time.monotonic()))

    def wait_until_quiet(self) -> None:
        """Between runs: wait until no job counts as in flight any more (:data:`fuzz.isolation.guard.blame.LINGER`), so that
        the next one runs alone, also to whatever names the jobs in flight by time."""
        left = self._blame.quiet_from() - time.monotonic()
        if 0 < left < math.inf:
            time.sleep(left)
            # Every process seen running now: a stop found later happened later, and names no
            # job that is over (a window opens at the last check, which may have come before).
            sweep()

    def in_flight(self, since: float | None = None) -> tuple[str, ...]:
        """The keys of the jobs running now, or with ``since`` (a ``time.monotonic()``), of those in
        flight at any moment from then until now (:class:`fuzz.isolation.guard.blame.Timeline`). Read from other threads too."""
        if since is not None:
            return self._blame.between(since, time.monotonic())
        return tuple(driver.job.key for driver in list(self._drivers) if driver.job is not None)

    def close(self) -> None:
        """Kill every driver (and so the workers they started)."""
        self._blame.close()
        for driver in list(self._drivers):
            self._retire(driver)
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)


def _tail(text: str, lines: int = 12) -> str:
    text = (text or "").strip()
    if not text:
        return ""
    return "\n  stderr (last lines):\n" + "\n".join("    " + line for line in text.splitlines()[-lines:])
