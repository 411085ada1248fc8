"""The machine's CPU slots that runs' parts share (fuzz.grading.cpu_slots)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from fuzz.grading import cpu_slots

ROOT = Path(__file__).resolve().parents[3]


def test_a_run_takes_only_the_free_slots(tmp_path):
    first = cpu_slots.take(3, directory=tmp_path, cpus=4)
    second = cpu_slots.take(3, directory=tmp_path, cpus=4)
    assert (len(first), len(second)) == (3, 1)
    assert len(cpu_slots.take(1, directory=tmp_path, cpus=4)) == 0
    first.release()
    with cpu_slots.take(4, directory=tmp_path, cpus=4) as third:
        assert len(third) == 3  # the second still holds one
    assert len(third) == 0
    del second  # dropped: its slot goes back
    assert len(cpu_slots.take(4, directory=tmp_path, cpus=4)) == 4


def test_asking_for_none_takes_none(tmp_path):
    assert len(cpu_slots.take(0, directory=tmp_path, cpus=2)) == 0
    assert len(cpu_slots.take(2, directory=tmp_path, cpus=2)) == 2


def _holder(tmp_path: Path, wanted: int) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import sys, time
        from fuzz.grading import cpu_slots
        slots = cpu_slots.take({wanted}, directory={str(tmp_path)!r}, cpus=4)
        print(len(slots), flush=True)
        time.sleep(60)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout.readline().strip() == str(wanted)
    return holder


def test_another_process_holds_its_slots_and_a_killed_one_frees_them(tmp_path):
    holder = _holder(tmp_path, 3)
    try:
        with cpu_slots.take(4, directory=tmp_path, cpus=4) as left:
            assert len(left) == 1
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert len(cpu_slots.take(4, directory=tmp_path, cpus=4)) == 4


def test_an_unwritable_directory_gives_no_slot(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert len(cpu_slots.take(2, directory=blocker / "slots", cpus=2)) == 0


def test_the_default_directory_is_the_users_own():
    assert cpu_slots.default_directory().name == f"lse-fuzz-cpu-slots-{os.getuid()}"
