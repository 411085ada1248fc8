"""The one handle on a child of the fork server (fuzz.isolation.fork_server.child.Child): it spawns,
its log is tailed, and it is killed with its process group and waited for."""

from __future__ import annotations

import signal
import time

import pytest

from fuzz.isolation.environment import fork_server_environment, worker_environment, worker_sys_path
from fuzz.isolation.fork_server.child import Child
from fuzz.isolation.fork_server.client import zygote_for


@pytest.fixture
def spawn(tmp_path):
    env = worker_environment()
    server = zygote_for(fork_server_environment(env))  # the pool's: shared with the other tests
    children = []

    def spawn_child(**args) -> tuple[Child, list[int]]:
        child = Child.spawn(server, "fork_server_children:speak_then_wait", args, cwd=tmp_path, env=env,
                            sys_path=worker_sys_path(), stdout=tmp_path / "out", stderr=tmp_path / "err")
        children.append(child)
        assert child.conn.poll(60), "the child never spoke"
        return child, [int(pid) for pid in child.conn.recv_bytes().split()]

    yield spawn_child
    for child in children:
        child.kill()
        child.close()


def _gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, IndexError):
            return True
        time.sleep(0.05)
    return False


def test_a_child_runs_in_its_directory_with_its_streams_in_files_and_its_exit_code_is_known(spawn, tmp_path):
    child, pids = spawn(stdout="to stdout", stderr="to stderr", code=3)
    assert pids == [child.pid]
    assert child.tail().strip() == "to stderr"
    assert (tmp_path / "out").read_text().strip() == "to stdout"
    assert child.wait(timeout=0.2) is None  # still running: it waits for its channel to close
    child.close()
    assert child.wait(timeout=30) == 3


def test_the_tail_is_the_last_bytes_of_its_stderr(spawn):
    child, _ = spawn(stderr="x" * 100 + "END")
    assert child.tail(limit=10) == "xxxxxxEND\n"


def test_a_killed_child_takes_its_process_group_with_it(spawn):
    child, (pid, grandchild) = spawn(grandchild=True)
    assert not _gone(grandchild, seconds=0.2)
    child.kill()
    assert child.wait(timeout=30) == -signal.SIGKILL
    assert _gone(pid) and _gone(grandchild)
