"""The supervisor (fuzz.isolation.guard.supervisor): a grading process killed by SIGKILL is started
again until one ends by itself, and its exit code is the command's; signals from outside are passed
on, a candidate's ignored; the supervisor is on no parent chain of the grader's, is continued when
stopped, and its own death ends the grader.

Each test runs a small program that calls :func:`supervise` as the command line does (it forks): the
"grader" there does what the test asks, told by the files it finds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz.isolation.guard.signals import SUPPORTED
from fuzz.isolation.processes import stat_fields
from fuzz.isolation.guard.supervisor import CONTINUE_AFTER, FRUITLESS

pytestmark = pytest.mark.skipif(not SUPPORTED or not os.path.isdir("/proc"), reason="Linux only")

ROOT = Path(__file__).resolve().parents[4]

# argv: the folder it works in, what the grader does. The grader runs with the signals held, as the
# command's does (fuzz.isolation.hold_signals); "records" counts the lines of records.txt.
PROGRAM = """
import os, signal, sys, time
from fuzz.isolation import hold_signals, supervise
here, act = sys.argv[1], sys.argv[2]
hold_signals()

def records():
    try:
        return len(open(os.path.join(here, "records.txt")).read().split())
    except OSError:
        return 0

if act == "exits_before_the_middle_process_wakes":
    real_fork, supervisor = os.fork, os.getpid()

    def fork():
        pid = real_fork()
        if pid and os.getpid() != supervisor:
            time.sleep(1)  # the middle process waits for a CPU while the grader runs to its end
        return pid

    os.fork = fork
supervision = supervise(records)
if supervision.code is not None:
    open(os.path.join(here, "supervisor.txt"), "w").write(str(os.getpid()))
    sys.exit(supervision.code)
me = os.getpid()
with open(os.path.join(here, "graders.txt"), "a") as f:
    f.write(f"{me} {int(supervision.again)}\\n")
chain, pid = [], os.getppid()
while pid > 1:  # the middle process that forked this one may be gone (reaped) by now: the walk ends there
    chain.append(pid)
    try:
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
open(os.path.join(here, "chain.txt"), "w").write(" ".join(map(str, chain)))
if act == "killed_once" and not supervision.again:
    os.kill(me, signal.SIGKILL)
if act == "leaves_a_stopped_child" and not supervision.again:
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    os.kill(child.pid, signal.SIGSTOP)  # as a candidate stops the fork server: it cannot see its parent go
    open(os.path.join(here, "child.txt"), "w").write(str(child.pid))
    time.sleep(0.5)  # the supervisor has seen it
    os.kill(me, signal.SIGKILL)
if act == "killed_always":
    os.kill(me, signal.SIGKILL)
if act == "killed_once_with_a_record" and not supervision.again:
    open(os.path.join(here, "records.txt"), "a").write("r ")
    os.kill(me, signal.SIGKILL)
if act in ("waits_for_sigterm", "outlives_not"):
    open(os.path.join(here, "ready"), "w").close()
    info = signal.sigtimedwait({signal.SIGTERM}, 60)
    open(os.path.join(here, "sigterm.txt"), "w").write("none" if info is None else str(info.si_pid))
    sys.exit(supervision.ended(130))
if act == "its_child_signals_the_supervisor":
    import subprocess
    supervisor = int(open(os.path.join(here, "supervisor_pid")).read())
    subprocess.run([sys.executable, "-c", f"import os, signal; os.kill({supervisor}, signal.SIGTERM)"])
    time.sleep(1)
if act == "killed_once_then_stops_the_supervisor" and not supervision.again:
    os.kill(me, signal.SIGKILL)
if act == "stops_itself":  # as a candidate that stopped the grader and its watchdog leaves it
    os.kill(me, signal.SIGSTOP)
if act in ("stops_the_supervisor", "killed_once_then_stops_the_supervisor"):
    os.kill(int(open(os.path.join(here, "supervisor_pid")).read()), signal.SIGSTOP)
    time.sleep(1)
sys.exit(supervision.ended(5))
"""


def start(tmp_path: Path, act: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", PROGRAM, str(tmp_path), act], cwd=ROOT,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    (tmp_path / "supervisor_pid").write_text(str(process.pid))
    return process


def graders(tmp_path: Path) -> list[tuple[int, bool]]:
    lines = (tmp_path / "graders.txt").read_text().split("\n")
    return [(int(pid), again == "1") for pid, again in (line.split() for line in lines if line)]


def finish(process: subprocess.Popen) -> tuple[int, str]:
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def test_the_graders_exit_code_is_the_commands(tmp_path):
    code, err = finish(start(tmp_path, "exits"))
    assert code == 5, err
    assert [again for _, again in graders(tmp_path)] == [False]


def test_a_grader_that_ends_before_the_process_that_forked_it_wakes_still_gives_the_exit_code(tmp_path):
    code, err = finish(start(tmp_path, "exits_before_the_middle_process_wakes"))
    assert code == 5, err
    assert [again for _, again in graders(tmp_path)] == [False]


def test_a_grader_killed_by_sigkill_is_started_again_to_continue(tmp_path):
    code, err = finish(start(tmp_path, "killed_once"))
    assert code == 5, err
    assert [again for _, again in graders(tmp_path)] == [False, True]  # the second continues the batch
    assert err.count("the grader was killed (SIGKILL") == 1 and "restart 1" in err


def test_the_supervisor_gives_up_when_deaths_add_no_record(tmp_path):
    code, err = finish(start(tmp_path, "killed_always"))
    assert code == 128 + signal.SIGKILL, err
    # The first death adds to nothing; then FRUITLESS deaths in a row with no new record.
    assert len(graders(tmp_path)) == 1 + FRUITLESS
    assert f"killed {FRUITLESS} times in a row with no new record" in err and "--resume" in err


def test_a_death_that_added_a_record_is_not_fruitless(tmp_path):
    (tmp_path / "records.txt").write_text("r r ")
    code, err = finish(start(tmp_path, "killed_once_with_a_record"))
    assert code == 5 and "with 3 record(s)" in err, err


def test_the_supervisor_is_on_no_parent_chain_of_the_graders(tmp_path):
    process = start(tmp_path, "exits")
    code, err = finish(process)
    assert code == 5, err
    chain = [int(pid) for pid in (tmp_path / "chain.txt").read_text().split()]
    assert process.pid not in chain  # a candidate walking up from its worker does not find it
    # ... and the grader did not wait for that by the time limit: its first parent was gone at once.
    assert "had not exited after" not in err, err


def test_a_signal_from_outside_is_passed_on_and_ends_the_batch(tmp_path):
    process = start(tmp_path, "waits_for_sigterm")
    wait_for(tmp_path / "ready")
    process.send_signal(signal.SIGTERM)
    code, err = finish(process)
    assert code == 130, err
    assert (tmp_path / "sigterm.txt").read_text() == str(process.pid)  # passed on by the supervisor


def test_a_signal_from_the_graders_tree_is_ignored_and_said(tmp_path):
    code, err = finish(start(tmp_path, "its_child_signals_the_supervisor"))
    assert code == 5, err  # not interrupted
    assert "ignored SIGTERM sent to the command by pid" in err and "a process of the batch" in err


def test_a_stopped_supervisor_is_continued_and_returns(tmp_path):
    code, err = finish(start(tmp_path, "stops_the_supervisor"))
    assert code == 5, err


def test_the_supervisors_death_ends_the_grader(tmp_path):
    process = start(tmp_path, "outlives_not")
    wait_for(tmp_path / "ready")
    process.kill()
    process.communicate(timeout=30)
    wait_for(tmp_path / "sigterm.txt")
    time.sleep(0.1)
    [(grader, _)] = graders(tmp_path)
    assert (tmp_path / "sigterm.txt").read_text() == str(grader)  # it sent itself SIGTERM: the supervisor was gone


def test_the_supervisors_watchdog_outlives_a_restart(tmp_path):
    # The watchdog started with the first grader still continues the supervisor while the second,
    # forked after it started, runs.
    code, err = finish(start(tmp_path, "killed_once_then_stops_the_supervisor"))
    assert code == 5, err
    assert [again for _, again in graders(tmp_path)] == [False, True]


def test_a_grader_left_stopped_is_continued_by_its_supervisor(tmp_path):
    started = time.monotonic()
    code, err = finish(start(tmp_path, "stops_itself"))
    assert code == 5, err
    assert time.monotonic() - started >= CONTINUE_AFTER  # not before its own watchdog would have


def test_what_a_killed_grader_left_stopped_is_killed(tmp_path):
    code, err = finish(start(tmp_path, "leaves_a_stopped_child"))
    assert code == 5, err
    child = int((tmp_path / "child.txt").read_text())
    deadline = time.monotonic() + 10
    while _state(child) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(child) in (None, "Z")  # gone (or a zombie of init's), not stopped for good


def _state(pid: int) -> str | None:
    fields = stat_fields(pid)
    return fields[0] if fields else None
