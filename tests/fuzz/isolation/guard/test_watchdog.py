"""The grader itself stopped (SIGSTOP) is continued by its watchdog and the stop is told; a stop of
its whole process group, as the terminal's Ctrl-Z sends, is left alone; and the guard drops the
unfilled siginfo that CPython's ``sigtimedwait`` returns once a stop interrupted it past its
timeout. Each case runs in a process of its own: stopping pytest's would stop the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from fuzz.isolation.guard.signals import _filled
from fuzz.isolation.processes import stat_fields

ROOT = Path(__file__).resolve().parents[4]

# Starts its watchdog, has a child stop it, and prints the stops told and how long it was stopped.
STOPPED = """
import os, signal, subprocess, sys, time
from fuzz.isolation.guard import stops, watchdog
told = []
stops.report_stops(lambda pid, since, found: told.append((pid, found - since)))
dog = watchdog.start_watchdog() if sys.argv[1] == "on" else None
started = time.monotonic()
subprocess.run([sys.executable, "-c", f"import os, signal; os.kill({os.getpid()}, signal.SIGSTOP)"])
time.sleep(1.0)
print(len(told), all(pid == os.getpid() for pid, _ in told), round(time.monotonic() - started, 1), flush=True)
if dog is not None:
    dog.stop()
"""

# Starts its watchdog, says so, then sleeps: the test stops its whole process group.
SLEEPS = """
import sys, time
from fuzz.isolation.guard import watchdog
dog = watchdog.start_watchdog()
print(dog.pid, flush=True)
time.sleep(float(sys.argv[1]))
dog.stop()
"""


def _python(code: str, *argv: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_a_process_stopped_by_another_is_continued_by_its_watchdog_and_the_stop_is_told():
    out, err = _python(STOPPED, "on").communicate(timeout=60)
    told, its_own, seconds = out.split()
    assert (int(told), its_own) == (1, "True"), err
    assert float(seconds) < 5.0


def test_without_its_watchdog_a_stopped_process_stays_stopped():
    process = _python(STOPPED, "off")
    try:
        time.sleep(3.0)
        assert stat_fields(process.pid)[0] == "T"  # nothing continues it
    finally:
        process.kill()
        process.communicate(timeout=30)


def test_a_stop_of_the_whole_process_group_is_left_alone():
    # The terminal's Ctrl-Z stops the foreground process group: the watchdog, in it, is stopped too.
    process = _python(SLEEPS, "20", start_new_session=True)
    try:
        dog = int(process.stdout.readline())
        os.killpg(process.pid, signal.SIGSTOP)
        time.sleep(2.0)
        assert stat_fields(process.pid)[0] == "T" and stat_fields(dog)[0] == "T"
        os.killpg(process.pid, signal.SIGCONT)
        time.sleep(0.5)
        assert stat_fields(process.pid)[0] != "T"
    finally:
        process.kill()
        process.communicate(timeout=30)


def test_an_unfilled_siginfo_is_no_signal():
    assert _filled(SimpleNamespace(si_code=0))  # kill()
    assert _filled(SimpleNamespace(si_code=0x80))  # the kernel: the terminal's Ctrl-C
    assert _filled(SimpleNamespace(si_code=-6))  # tgkill()
    assert not _filled(SimpleNamespace(si_code=1982222704))  # seen after a stop of the grader
