"""A worker that only waits is told from one that computes, one stopped and one whose child computes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from fuzz.isolation.processes import child_pids
from fuzz.isolation.worker.idle import IDLE_CPU, STOPPED_WATCHES, Watch, usage

SLEEPS = "import time; time.sleep(60)"
SPINS = "while True: pass"
SLEEPS_OVER_A_SPINNING_CHILD = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'while True: pass']); "
                                "time.sleep(60)")


@pytest.fixture
def process():
    started = []

    def start(code: str) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", code])
        started.append(child)
        time.sleep(1.0)  # past Python's start, which computes
        return child

    yield start
    for child in started:
        child.send_signal(signal.SIGCONT)
        for grandchild in child_pids(child.pid):  # the spinning child of SLEEPS_OVER_A_SPINNING_CHILD
            with contextlib.suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)
        child.kill()
        child.wait()


def watched(pid: int, seconds: float = 0.5) -> str | None:
    watch = Watch(pid)
    time.sleep(seconds)
    return watch.idle(seconds)


def test_a_sleeping_process_is_idle(process):
    reason = watched(process(SLEEPS).pid)
    assert reason is not None and "used 0 s of CPU, every thread waiting" in reason


@pytest.mark.parametrize("code", [SPINS, SLEEPS_OVER_A_SPINNING_CHILD], ids=["spins", "its_child_spins"])
def test_a_process_that_computes_or_whose_child_does_is_not_idle(process, code):
    assert watched(process(code).pid) is None


def test_a_stopped_process_is_not_idle(process):
    # Stopped by another candidate, it is continued by the guard; it does not wait by itself.
    child = process(SLEEPS)
    child.send_signal(signal.SIGSTOP)
    time.sleep(0.2)
    assert watched(child.pid) is None


def test_a_process_gone_is_not_judged(process):
    child = process(SLEEPS)
    watch = Watch(child.pid)
    child.kill()
    child.wait()
    assert watch.idle(0.5) is None and usage(child.pid) is None and Watch(None).idle(0.5) is None


def test_cpu_used_past_the_threshold_is_not_idle(process, monkeypatch):
    # The CPU threshold alone decides once no thread is runnable: a sleeper that used a little CPU.
    child = process(SLEEPS)
    watch = Watch(child.pid)
    monkeypatch.setattr(watch, "before", (watch.before[0] - 2 * IDLE_CPU * 0.5, frozenset()))
    assert watch.idle(0.5) is None


def test_a_sleeper_stopped_by_another_is_watched_again_and_found_idle_once_continued(process):
    # A stopper of the grading processes stops the hang's worker as the window ends; the guard
    # continues it: watched again, the sleeper is a hang then (it got the second deadline before).
    child = process(SLEEPS)
    watch = Watch(child.pid)
    child.send_signal(signal.SIGSTOP)
    time.sleep(0.5)
    assert watch.idle(0.5) is None and watch.stopped
    again = watch.again()
    assert again is not None and again.stops == 1
    child.send_signal(signal.SIGCONT)
    time.sleep(0.1)  # the continue lands
    again = Watch(child.pid, stops=again.stops)  # watched from the moment it runs again
    time.sleep(0.5)
    assert again.idle(0.5) is not None and not again.stopped and again.again() is None


def test_a_spinner_stopped_meanwhile_is_watched_again_and_found_computing(process):
    child = process(SPINS)
    child.send_signal(signal.SIGSTOP)
    time.sleep(0.2)
    watch = Watch(child.pid)
    time.sleep(0.5)
    assert watch.idle(0.5) is None and watch.stopped
    child.send_signal(signal.SIGCONT)
    again = watch.again()
    time.sleep(0.5)
    assert again.idle(0.5) is None and not again.stopped and again.again() is None


def test_a_process_kept_stopped_is_watched_again_only_so_often(process):
    child = process(SLEEPS)
    child.send_signal(signal.SIGSTOP)
    time.sleep(0.2)
    watch, watches = Watch(child.pid), 1
    while True:
        assert watch.idle(0.1) is None
        watch = watch.again()
        if watch is None:
            break
        watches += 1
    assert watches == STOPPED_WATCHES


def test_a_window_that_saw_a_thread_stopped_and_one_just_continued_is_watched_again(monkeypatch):
    # A stopper stops the worker on each of its calls and the guard continues it each time: one look
    # finds a thread stopped, the other one just continued (runnable), no CPU used between. The
    # window tells nothing: watched again (before, the second deadline: 120 s for a sleeping hang).
    from fuzz.isolation.worker import idle

    looks = iter([(1.0, frozenset("T")), (1.0, frozenset("R")), (1.0, frozenset())])  # the third: the next watch's
    monkeypatch.setattr(idle, "usage", lambda pid: next(looks))
    watch = Watch(123)
    assert watch.idle(2.0) is None and watch.stopped
    assert watch.seen == "0 s of CPU in 2 s, a thread running, a thread stopped"  # for the hang's reason
    again = watch.again()
    assert again is not None and again.stops == 1
    looks = iter([(1.0, frozenset("T")), (1.5, frozenset("R"))])  # it computed meanwhile: no
    watch = Watch(123)
    assert watch.idle(2.0) is None and not watch.stopped and watch.again() is None
