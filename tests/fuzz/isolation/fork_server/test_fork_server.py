"""The fork server (fuzz.isolation.fork_server: its client and its server): started early, once,
ready for kernels to compile, and what it forks takes none of the grader's blocked signals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fuzz.isolation import worker_environment
from fuzz.isolation.fork_server import client as zygote
from fuzz.isolation.fork_server import server

ROOT = Path(__file__).resolve().parents[4]


def _fresh_env() -> dict[str, str]:
    # A key no other test of this process has a fork server for (TRITON_* is kept for workers).
    return dict(worker_environment(), TRITON_LSE_FUZZ_TEST=uuid.uuid4().hex)


@pytest.fixture
def launches(monkeypatch):
    started: list[dict] = []
    launch = zygote.Zygote.launch.__func__

    def counting(cls, env):
        started.append(env)
        return launch(cls, env)

    monkeypatch.setattr(zygote.Zygote, "launch", classmethod(counting))
    return started


def _forget(env: dict[str, str]) -> zygote.Zygote:
    with zygote._ZYGOTES_LOCK:
        return zygote._ZYGOTES.pop(json.dumps(sorted(env.items())))


def test_an_early_start_is_the_fork_server_asked_for_later(launches):
    env = _fresh_env()
    zygote.prestart(env)
    zygote.prestart(env)  # a second early start of the same environment is the first
    server = zygote.zygote_for(env)
    try:
        assert len(launches) == 1
        assert server.address is not None and server.alive()  # ready: its hello was read
        assert zygote.zygote_for(env) is server
    finally:
        _forget(env).close()


def test_an_early_start_never_asked_for_is_stopped_at_once(launches):
    env = _fresh_env()
    zygote.prestart(env)
    server = _forget(env)
    assert server.address is None  # still importing torch: close does not wait for it to finish
    server.close()
    assert server.process.returncode == -signal.SIGKILL


def test_a_grading_driver_starts_no_fork_server_of_its_own(launches, monkeypatch):
    monkeypatch.setenv(zygote.ZYGOTE_ADDRESS_ENV, "/nonexistent/socket")  # it connects to its parent's
    zygote.prestart(_fresh_env())
    assert launches == []


def test_the_fork_server_hashes_triton_once_for_its_workers_when_kernels_compile(monkeypatch):
    from triton.runtime.cache import triton_key

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    triton_key.cache_clear()
    server._hash_triton()
    assert triton_key.cache_info().currsize == 1  # forked workers inherit it
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    triton_key.cache_clear()
    server._hash_triton()
    assert triton_key.cache_info().currsize == 0  # nothing compiles in the interpreter: no time spent


def test_workers_do_not_inherit_the_signals_the_grader_blocks():
    # The grader blocks them in every thread; a blocked mask survives fork and exec, so without the
    # fork server's reset its drivers and workers would shrug off SIGTERM and Ctrl-C.
    script = """
import signal
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
from fuzz.isolation import IsolatedImpl
with IsolatedImpl("tests/implementations/correct/torch_float32.py:lse") as impl:
    status = open(f"/proc/{impl.pid}/status").read()
    print(next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")))
"""
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.split()[-1], 16) == 0


def test_the_fork_server_leaves_without_a_word_once_it_has_served(monkeypatch):
    # It freezes what it preloads (its children's collections never scan torch and Triton): a
    # shutdown of the interpreter would then have nanobind print "leaked" lines into its log.
    remove = shutil.rmtree
    monkeypatch.setattr(zygote.shutil, "rmtree", lambda *args, **kwargs: None)  # keep the log to read
    fork_server = zygote.Zygote.launch(_fresh_env()).ready()
    try:
        fork_server.close()
        assert fork_server.process.returncode == 0
        assert fork_server.log.read_text() == ""
    finally:
        remove(fork_server.log.parent, ignore_errors=True)


def test_an_orphan_lingers_for_its_graders_running_time_and_never_past_the_cap(monkeypatch):
    # Its zombie is how the guard knows an orphan's signal was the run's: reaped while the grader
    # was stopped, the signal taken later came from a stranger and ended the batch.
    reaped = []
    monkeypatch.setattr(server.os, "waitpid", lambda pid, flags: (reaped.append(pid), (pid, 0))[1])
    orphans = {101: 0.0}
    for _ in range(100):  # the grader stopped: no time counts
        server._reap({}, {}, orphans, 0.0)
    assert reaped == [] and orphans == {101: 0.0}
    server._reap({}, {}, orphans, server.ORPHAN_LINGER - 0.1)
    assert reaped == []
    server._reap({}, {}, orphans, 0.2)
    assert reaped == [101] and orphans == {}
    # A grader stopped for long beside an orphan a call: the oldest zombies go past the cap.
    monkeypatch.setattr(server, "MAX_LINGERING", 3)
    orphans = dict.fromkeys(range(1, 6), 0.0)
    reaped.clear()
    server._reap({}, {}, orphans, 0.0)
    assert reaped == [1, 2] and list(orphans) == [3, 4, 5]


def test_asking_a_fork_server_that_died_is_an_unanswered_spawn_not_a_broken_pipe():
    # A candidate kills the fork server just after the pool saw it alive: the request fails as an
    # unanswered one (the pool then starts another), never a BrokenPipeError that ends the batch.
    env = _fresh_env()
    server_ = zygote.zygote_for(env)
    try:
        server_.process.kill()
        server_.process.wait(timeout=30)
        with pytest.raises(RuntimeError, match=zygote.SPAWN_UNANSWERED):
            for _ in range(3):  # the first send may still land in the socket's buffer
                server_.spawn({"entry": "m:f"}, (0, 1, 2), timeout=1.0)
    finally:
        _forget(env)
        server_.close()
