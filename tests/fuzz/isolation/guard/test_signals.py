"""Who sent a signal to the grader (fuzz.isolation.guard.signals.sender_of), as a table of siginfo
cases; the mask the grader blocks never reaching the processes the fork server starts is a test of
the fork server's (tests/fuzz/isolation/fork_server)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from fuzz.isolation.guard import signals
from fuzz.isolation.guard.signals import SI_KERNEL, SI_TKILL, SI_USER, Sender, SignalEvent, describe_signals, sender_of

SI_QUEUE = -1  # sigqueue(): the sender writes si_pid itself


def info(pid: int, code: int = SI_USER, signo: int = signal.SIGTERM) -> SimpleNamespace:
    return SimpleNamespace(si_signo=signo, si_code=code, si_pid=pid)


@pytest.fixture
def child():
    """A live process below this one: a process of the run, were this the grader."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    yield process
    process.kill()
    process.wait()


def gone_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()  # reaped: no longer in /proc
    return process.pid


@pytest.mark.parametrize("case, expected", [
    ("terminal", Sender.KERNEL),  # Ctrl-C, a hang-up: the kernel, si_pid 0
    ("sigio_for_a_file", Sender.UNPROVEN),  # F_SETOWN made the kernel send it on someone's behalf
    ("sigqueue", Sender.UNPROVEN),  # si_pid written by the sender: proves nothing
    ("itself", Sender.OUTSIDE),  # os.kill(os.getpid(), ...)
    ("stranger", Sender.OUTSIDE),  # alive, not below us (our own parent)
    ("gone_unknown", Sender.OUTSIDE),  # exited, never a pid of the run: e.g. /bin/kill
    ("child", Sender.RUN),
    ("child_by_tgkill", Sender.RUN),
    ("gone_recorded", Sender.RUN),  # a worker that signalled and exited at once
    ("gone_forgotten", Sender.OUTSIDE),  # its job ended: the pid may be anyone's now
])
def test_the_sender_of_a_signal(case, expected, child):
    me = os.getpid()
    gone = gone_pid()
    if case in ("gone_recorded", "gone_forgotten"):
        signals.remember(gone)
    if case == "gone_forgotten":
        signals.forget([gone])
    siginfo = {
        "terminal": info(0, SI_KERNEL, signal.SIGINT), "sigio_for_a_file": info(0, SI_KERNEL, signal.SIGIO),
        "sigqueue": info(child.pid, SI_QUEUE), "itself": info(me), "stranger": info(os.getppid()),
        "gone_unknown": info(gone), "child": info(child.pid), "child_by_tgkill": info(child.pid, SI_TKILL),
        "gone_recorded": info(gone), "gone_forgotten": info(gone),
    }[case]
    sender, lineage = sender_of(siginfo, root=me, grace=0.0)
    assert sender is expected
    assert lineage == {"child": (child.pid,), "child_by_tgkill": (child.pid,), "gone_recorded": (gone,)}.get(case, ())


def test_a_grandchild_in_a_session_of_its_own_is_still_below_the_grader(tmp_path):
    # setsid() leaves the session, not the tree: the lineage names every process up to the grader.
    pid_file = tmp_path / "grandchild"
    script = (f"import os, time\nif os.fork() == 0:\n    os.setsid()\n    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
              "    time.sleep(30)\nelse:\n    time.sleep(30)\n")
    process = subprocess.Popen([sys.executable, "-c", script])
    grandchild = None
    try:
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        grandchild = int(pid_file.read_text())
        assert signals.lineage(grandchild, os.getpid()) == (grandchild, process.pid)
        assert signals.lineage(grandchild, process.pid + 10**7) is None  # no such ancestor
    finally:
        if grandchild is not None:
            os.kill(grandchild, signal.SIGKILL)
        process.kill()
        process.wait()


def test_the_description_names_each_signal_once_and_the_sender():
    events = [SignalEvent(signal.SIGTERM, 7, Sender.RUN, (7,)), SignalEvent(signal.SIGINT, 7, Sender.RUN, (7,)),
              SignalEvent(signal.SIGTERM, 7, Sender.RUN, (7,))]
    assert describe_signals(events) == "sent SIGINT and SIGTERM to the grader (from pid 7)"
    many = [SignalEvent(signal.SIGTERM, pid, Sender.RUN, (pid,)) for pid in range(10, 15)]
    assert describe_signals(many) == "sent SIGTERM to the grader (from pids 10, 11, 12 and 2 more)"
