"""The process plumbing the fork server, the Child handle and the guard share (fuzz.isolation.processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from fuzz.isolation.processes import kill_group, stat_fields


def test_stat_fields_count_after_a_command_name_with_spaces_and_parentheses(tmp_path):
    odd = tmp_path / "a b) (c"
    odd.symlink_to(sys.executable)
    process = subprocess.Popen([str(odd), "-c", "import time; time.sleep(30)"])
    try:
        fields = stat_fields(process.pid)
        assert fields is not None and fields[0] in ("R", "S", "D") and int(fields[1]) == os.getpid()  # state, parent
    finally:
        process.kill()
        process.wait()
    assert stat_fields(process.pid) is None  # reaped: gone
    assert int(stat_fields()[1]) == os.getppid()  # "self" by default


def test_kill_group_kills_the_leader_and_its_group_and_minds_no_missing_process():
    leader = subprocess.Popen([sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '30']); "
                               "print('ready', flush=True); time.sleep(30)"],
                              stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout.readline().strip() == b"ready"
    member = next(int(pid) for pid in os.listdir("/proc")
                  if pid.isdigit() and (stat_fields(pid) or ["", ""])[1] == str(leader.pid))
    kill_group(leader.pid)
    assert leader.wait(timeout=10) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while (fields := stat_fields(member)) is not None and fields[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fields is None or fields[0] == "Z"  # the group went with its leader
    kill_group(leader.pid)  # gone (reaped): no error
