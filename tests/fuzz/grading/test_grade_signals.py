"""A candidate that signals the grader (SIGTERM, then SIGINT) or stops its processes (SIGSTOP)
cannot stop the batch: the signals are ignored, the stopped processes continued, the culprit
crashes with a reason that says what it did, its neighbour passes; a signal from outside the run
(the test's own, or ^C typed into the grader's terminal) still interrupts it, resumable.
``check`` too.

Each test runs the command as its own process, as a user would: a real signal to pytest's own
process would go elsewhere."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
IMPLEMENTATIONS = ROOT / "tests" / "implementations"
FAST = ["--budget", "10", "--max-elements", "1024", "-q"]


def lse_fuzz(*argv: str, cwd: Path) -> subprocess.Popen:
    # A shell starts background jobs with SIGINT ignored, and Python keeps an inherited SIG_IGN:
    # give the command the default disposition, as a terminal would.
    return subprocess.Popen([sys.executable, "-m", "fuzz", *argv], cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def records_of(out: Path) -> dict[str, dict]:
    return {Path(r["candidate"]).stem: r for r in map(json.loads, (out / "grade.jsonl").read_text().splitlines())}


def batch(directory: Path, files: dict[str, Path]) -> Path:
    directory.mkdir()
    for name, source in files.items():
        shutil.copy(source, directory / f"{name}.py")
    return directory


KILLED = "the grader was killed (SIGKILL"  # the supervisor's word as it continues the batch


def graded_through_deaths(batch_dir: Path, out: Path, cwd: Path, *, jobs: str = "2",
                          timeout: float = 300) -> tuple[int, str, int]:
    """``grade`` the batch once, which continues itself while a candidate kills the grader
    (fuzz.isolation.guard.supervisor): (the exit code, stderr, the grader's deaths). Past
    ``timeout`` the test fails, the command killed."""
    process = lse_fuzz("grade", str(batch_dir), *FAST, "-j", jobs, "--out-dir", str(out), cwd=cwd)
    try:
        err = process.communicate(timeout=timeout)[1]
    finally:
        process.kill()
    return process.returncode, err, err.count(KILLED)


@pytest.mark.parametrize("attack, jobs", [
    ("signals_the_grader", "2"),
    ("signals_the_grader_from_a_new_session", "2"),
    # Nothing ties an orphan to its worker but the time it ran: blamed when its candidate ran alone,
    # at once, or (beside its neighbour, both suspects) when run again alone after the batch.
    ("signals_the_grader_from_an_orphan", "1"),
    ("signals_the_grader_from_an_orphan", "2"),
], ids=["from_its_worker", "from_a_new_session", "from_an_orphan", "from_an_orphan_beside_its_neighbour"])
def test_a_candidate_that_signals_the_grader_crashes_and_the_batch_finishes(tmp_path, attack, jobs):
    batch_dir = batch(tmp_path / "batch", {"a_attacker": IMPLEMENTATIONS / "hostile" / f"{attack}.py",
                                           "b_neighbour": IMPLEMENTATIONS / "correct" / "torch_float32.py"})
    out = tmp_path / "out"
    process = lse_fuzz("grade", str(batch_dir), *FAST, "-j", jobs, "--out-dir", str(out), cwd=tmp_path)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 1, err  # not 130: nothing interrupted it
    assert "interrupted" not in err
    records = records_of(out)
    assert set(records) == {"a_attacker", "b_neighbour"}
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    attacker = records["a_attacker"]
    assert attacker["verdict"] == "crash"
    assert attacker["reason"].startswith("it attacked the grader: it sent SIGINT and SIGTERM to the grader (from pid")
    assert "graded anyway: pass" in attacker["reason"]
    assert "no candidate could be tied" not in err


@pytest.mark.parametrize("jobs", ["2", "1"])
def test_a_candidate_that_stops_the_grading_processes_crashes_and_its_neighbour_passes(tmp_path, jobs):
    # It stops the fork server and every driver and worker beside it. Each is continued; a stop
    # names no sender, so whoever was in flight alone when it happened is blamed. When both were,
    # the stopper, named by more of the stops (the neighbour's own worker stopped names only the
    # stopper), runs again alone first and stops again; the stops that named the neighbour beside it
    # are then explained, and the neighbour keeps its record: it is not graded a second time.
    batch_dir = batch(tmp_path / "batch", {"a_stopper": IMPLEMENTATIONS / "hostile" / "stops_the_grading_processes.py",
                                           "b_neighbour": IMPLEMENTATIONS / "correct" / "torch_float32.py"})
    out = tmp_path / "out"
    process = lse_fuzz("grade", str(batch_dir), *FAST[:-1], "-j", jobs, "--out-dir", str(out), cwd=tmp_path)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 1, err
    assert not [line for line in err.splitlines() if "b_neighbour" in line and "graded again" in line], err
    records = records_of(out)
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    stopper = records["a_stopper"]
    assert stopper["verdict"] == "crash", stopper["reason"]
    assert stopper["reason"].startswith("it attacked the grader: it stopped the fork server and ")
    assert "grading driver" in stopper["reason"] and "(SIGSTOP), which were continued (graded anyway: pass" in stopper["reason"]
    assert "no candidate could be tied" not in err  # what named both is explained by the stopper


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_from_outside_the_run_still_interrupts_it(tmp_path, signum):
    # The first candidate signals the grader and is graded (a crash); during the second (a hang),
    # the test signals the grader from outside its tree: the run stops, resumable, as before.
    batch_dir = batch(tmp_path / "batch", {"a_attacker": IMPLEMENTATIONS / "hostile" / "signals_the_grader.py",
                                           "b_hang": IMPLEMENTATIONS / "candidates" / "hang.py",
                                           "c_wrong_shape": IMPLEMENTATIONS / "candidates" / "wrong_shape.py"})
    out = tmp_path / "out"
    process = lse_fuzz("grade", str(batch_dir), *FAST, "--call-timeout", "4", "-j", "1", "--out-dir", str(out),
                       cwd=tmp_path)
    deadline = time.monotonic() + 120
    report = out / "grade.jsonl"
    while time.monotonic() < deadline and process.poll() is None:
        if report.exists() and report.read_text().strip():
            break
        time.sleep(0.1)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted after 1 of 3 candidates" in err and "--resume" in err and "Traceback" not in err
    records = records_of(out)
    assert list(records) == ["a_attacker"] and records["a_attacker"]["verdict"] == "crash"


def test_check_ignores_the_candidates_signals_and_names_them(tmp_path):
    target = tmp_path / "attacker.py"
    shutil.copy(IMPLEMENTATIONS / "hostile" / "signals_the_grader.py", target)
    process = lse_fuzz("check", f"{target}:lse", *FAST[:-1], "--json", str(tmp_path / "result.json"), cwd=tmp_path)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 1, err
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["verdict"] == "crash" and "sent SIGINT and SIGTERM to the grader" in record["reason"]
    assert "sent SIGINT and SIGTERM to the grader" in out


def test_ctrl_c_in_the_terminal_still_interrupts_the_run(tmp_path):
    # The kernel sends the terminal's SIGINT (si_pid 0, SI_KERNEL) to the foreground process group:
    # the grader runs on a pseudo-terminal of its own here, and ^C is typed into it. The candidate
    # graded first signalled the grader itself and was ignored; the user's ^C is not.
    batch_dir = batch(tmp_path / "batch", {"a_attacker": IMPLEMENTATIONS / "hostile" / "signals_the_grader.py",
                                           "b_hang": IMPLEMENTATIONS / "candidates" / "hang.py"})
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "fuzz", "grade", str(batch_dir), *FAST, "--call-timeout", "4", "-j", "1",
            "--out-dir", str(out)]
    pid, terminal = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.chdir(tmp_path)
            os.execve(sys.executable, argv, dict(os.environ, PYTHONPATH=str(ROOT)))
        finally:
            os._exit(127)
    written, typed = b"", False
    deadline = time.monotonic() + 180
    report = out / "grade.jsonl"
    while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        written += _read_available(terminal)
        if not typed and report.exists() and report.read_text().strip():
            os.write(terminal, b"\x03")  # ^C, once the first candidate is graded
            typed = True
        time.sleep(0.1)
    if status[0] == 0:  # still running: do not leave it behind
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    written += _read_available(terminal)
    os.close(terminal)
    text = written.decode(errors="replace")
    assert status[0] == pid and os.waitstatus_to_exitcode(status[1]) == 130, text
    assert "interrupted after 1 of 2 candidates" in text and "--resume" in text
    assert {name: record["verdict"] for name, record in records_of(out).items()} == {"a_attacker": "crash"}


def _read_available(fd: int) -> bytes:
    data = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        data += chunk
    return data


# Stops the fork server once beside its neighbour (so both are suspects), and kills the grader
# (SIGKILL: nothing can block it) when it is graded again alone, in a new worker.
STOPS_THEN_KILLS_WHEN_ALONE = '''
import os
import signal

import torch

MARK = {mark!r}


def _grader():
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{{pid}}/cmdline", "rb") as f:
            if b"grade" in f.read().split(b"\\0"):
                return pid
        with open(f"/proc/{{pid}}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return None


def lse(x):
    if not os.path.exists(MARK):
        with open(MARK, "w") as f:
            f.write(str(os.getpid()))
        os.kill(os.getppid(), signal.SIGSTOP)
    elif open(MARK).read() != str(os.getpid()):
        os.kill(_grader(), signal.SIGKILL)
    return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
'''


def test_a_suspect_that_kills_the_grader_when_graded_again_alone_is_convicted(tmp_path):
    # Its first record is taken off the report while it runs again: the run after that death finds
    # it in flight alone when the grader died (grading.journal), not passed.
    batch_dir = batch(tmp_path / "batch", {"b_neighbour": IMPLEMENTATIONS / "correct" / "torch_float32.py"})
    (batch_dir / "a_sneak.py").write_text(STOPS_THEN_KILLS_WHEN_ALONE.format(mark=str(tmp_path / "mark")))
    out = tmp_path / "out"
    code, err, deaths = graded_through_deaths(batch_dir, out, tmp_path)
    assert (code, deaths) == (1, 1), err
    records = records_of(out)
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    assert records["a_sneak"]["verdict"] == "crash"
    assert "the grader died while it ran alone" in records["a_sneak"]["reason"]


# Appends a failing line to every other file of its batch folder as it is imported, then kills the
# grader as kills_the_grader.py does.
TAMPERS = '''import os

for name in os.listdir({folder!r}):
    if name.endswith(".py") and name != "a_tamperer.py":
        with open(os.path.join({folder!r}, name), "ab") as f:
            f.write(b"\\nraise ImportError('sabotaged by a neighbour')\\n")
'''


def test_a_neighbour_tampered_with_before_the_grader_was_killed_is_graded_as_submitted_on_resume(tmp_path):
    # The tamperer appends a failing line to its neighbour's file as it is imported, then kills the
    # grader. Each run reads the files when it starts; --resume used to read them again, tampered,
    # and graded the neighbour load_error. It keeps the bytes submitted (grading.snapshot).
    batch_dir = batch(tmp_path / "batch", {"b_neighbour": IMPLEMENTATIONS / "correct" / "torch_float32.py"})
    killer = (IMPLEMENTATIONS / "hostile" / "kills_the_grader.py").read_text()
    (batch_dir / "a_tamperer.py").write_text(TAMPERS.format(folder=str(batch_dir)) + killer)
    out = tmp_path / "out"
    code, err, deaths = graded_through_deaths(batch_dir, out, tmp_path, jobs="1")
    assert code == 1 and deaths >= 1, err
    assert b"sabotaged by a neighbour" in (batch_dir / "b_neighbour.py").read_bytes()  # the attack happened
    records = records_of(out)
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    assert records["a_tamperer"]["verdict"] == "crash", records["a_tamperer"]["reason"]
    assert "graded as submitted:" in err and "b_neighbour.py" in err, err


def test_a_stopper_whose_run_died_before_the_suspects_were_graded_is_graded_alone_on_resume(tmp_path):
    # The stopper and its neighbour run side by side (both suspects of its stops); the grader-killer
    # then ends the run before the suspects are graded again alone. Their records were written, but
    # in doubt: --resume grades the stopper alone first, whatever its record said, and convicts it.
    batch_dir = batch(tmp_path / "batch", {"a_stopper": IMPLEMENTATIONS / "hostile" / "stops_the_fork_server.py",
                                           "b_neighbour": IMPLEMENTATIONS / "correct" / "torch_float32.py",
                                           "c_killer": IMPLEMENTATIONS / "hostile" / "kills_the_grader.py"})
    out = tmp_path / "out"
    code, err, deaths = graded_through_deaths(batch_dir, out, tmp_path)
    assert code == 1 and deaths >= 1, err
    records = records_of(out)
    assert records["c_killer"]["verdict"] == "crash", records["c_killer"]["reason"]
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    assert records["a_stopper"]["verdict"] == "crash", records["a_stopper"]["reason"]
    assert records["a_stopper"]["reason"].startswith("it attacked the grader: it stopped the fork server (SIGSTOP)")


def test_a_suspect_that_did_not_pass_keeps_its_record_and_costs_no_second_run(tmp_path):
    # The hang is in flight for every stop of the fork server, so both are suspects. Graded again
    # alone, the hang could only turn its timeout into an attack, at the cost of its deadlines
    # again: it keeps its record; the stopper, which passed, is graded again alone and convicted.
    batch_dir = batch(tmp_path / "batch", {"a_stopper": IMPLEMENTATIONS / "hostile" / "stops_the_fork_server.py",
                                           "b_hang": IMPLEMENTATIONS / "candidates" / "hang.py"})
    out = tmp_path / "out"
    process = lse_fuzz("grade", str(batch_dir), *FAST[:-1], "--call-timeout", "2", "-j", "2", "--out-dir", str(out),
                       cwd=tmp_path)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 1, err
    assert not [line for line in err.splitlines() if "b_hang" in line and "graded again" in line], err
    records = records_of(out)
    assert records["b_hang"]["verdict"] == "timeout", records["b_hang"]["reason"]
    assert records["a_stopper"]["verdict"] == "crash", records["a_stopper"]["reason"]


def test_a_stopper_graded_alone_before_the_killer_killed_the_grader_again_keeps_its_own_reason(tmp_path):
    # The killer and the stopper start side by side; the killer ends the run. On --resume the
    # stopper, started last, runs briefly alone first and stops the fork server (crash); then the
    # killer's short run kills the grader again. The stopper's run ended with the grader alive: the
    # next --resume convicts the killer of the deaths, and the stopper only of its stops.
    batch_dir = batch(tmp_path / "batch", {"a_killer": IMPLEMENTATIONS / "hostile" / "kills_the_grader.py",
                                           "b_stopper": IMPLEMENTATIONS / "hostile" / "stops_the_fork_server.py",
                                           "c_neighbour": IMPLEMENTATIONS / "correct" / "torch_float32.py"})
    out = tmp_path / "out"
    code, err, deaths = graded_through_deaths(batch_dir, out, tmp_path)
    assert (code, deaths) == (1, 2), err
    records = records_of(out)
    assert records["c_neighbour"]["verdict"] == "pass", records["c_neighbour"]["reason"]
    assert records["a_killer"]["verdict"] == "crash", records["a_killer"]["reason"]
    assert "the grader died while it ran alone" in records["a_killer"]["reason"]
    assert records["b_stopper"]["verdict"] == "crash", records["b_stopper"]["reason"]
    assert records["b_stopper"]["reason"].startswith("it attacked the grader: it stopped the fork server (SIGSTOP)"), \
        records["b_stopper"]["reason"]


@pytest.mark.parametrize("stopper", ["stops_the_grader", "stops_the_grader_and_its_watchdog"])
def test_a_candidate_that_stops_the_grader_itself_is_convicted_and_holds_nothing_up(tmp_path, stopper):
    # Nothing continued the grader once a candidate stopped it: the batch waited for good (the
    # test's timeout). Its watchdog continues it; both were in flight, so both run briefly alone
    # after the batch, where the stopper stops the grader again and is convicted. A stopper that
    # stops the watchdog first is found by the supervisor, which continues the watchdog.
    batch_dir = batch(tmp_path / "batch", {"a_stopper": IMPLEMENTATIONS / "hostile" / f"{stopper}.py",
                                           "b_neighbour": IMPLEMENTATIONS / "correct" / "torch_float32.py"})
    out = tmp_path / "out"
    code, err, _ = graded_through_deaths(batch_dir, out, tmp_path, timeout=120)
    assert code == 1, err
    records = records_of(out)
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    assert records["a_stopper"]["verdict"] == "crash", records["a_stopper"]["reason"]
    assert records["a_stopper"]["reason"].startswith("it attacked the grader: it stopped the grader (SIGSTOP)")


def test_an_orphans_signal_taken_after_a_neighbour_stopped_the_grader_is_still_the_runs(tmp_path):
    # The grader takes the signals an orphan sent while another candidate kept it stopped only once
    # it runs again, seconds later; the fork server had reaped the orphan by then, and the
    # sender, gone from /proc, was taken for a stranger: its SIGINT ended the batch (exit 130),
    # as the hostile suite's batch did now and then. The orphan now lingers as a zombie for as long as the
    # grader has run since, not for a time the stop used up.
    batch_dir = batch(tmp_path / "batch", {
        "a_orphan": IMPLEMENTATIONS / "hostile" / "signals_the_grader_from_an_orphan.py",
        "b_stopper": IMPLEMENTATIONS / "hostile" / "stops_the_grader_and_its_watchdog.py"})
    out = tmp_path / "out"
    code, err, _ = graded_through_deaths(batch_dir, out, tmp_path, timeout=240)
    assert code == 1, err  # not 130
    assert "interrupted" not in err
    records = records_of(out)
    assert records["a_orphan"]["verdict"] == "crash", records["a_orphan"]["reason"]
    assert records["a_orphan"]["reason"].startswith("it attacked the grader: it sent SIGINT and SIGTERM to the grader")
    assert records["b_stopper"]["verdict"] == "crash", records["b_stopper"]["reason"]
    assert records["b_stopper"]["reason"].startswith("it attacked the grader: it stopped the grader (SIGSTOP)")


def test_check_of_a_candidate_that_stops_it_ends_with_a_crash(tmp_path):
    process = lse_fuzz("check", str(IMPLEMENTATIONS / "hostile" / "stops_the_grader.py"), *FAST[:-1], "--device", "cpu",
                       cwd=tmp_path)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 1, err
    assert "it attacked the grader: it stopped the grader (SIGSTOP), which was continued" in out + err


def _op_batch(tmp_path, attack: str) -> Path:
    """A batch of two correct merge kernels, the first with ``attack`` (a line) before its work."""
    batch_dir = tmp_path / "batch"
    batch_dir.mkdir()
    merge = (IMPLEMENTATIONS / "merge_correct" / "torch_float64.py").read_text()
    (batch_dir / "a_attacker.py").write_text(merge.replace("import torch\n", "import os\nimport signal\n\nimport torch\n", 1)
                                             .replace("    a, b = s_a.double()", f"    {attack}\n    a, b = s_a.double()"))
    (batch_dir / "b_neighbour.py").write_text(merge)
    return batch_dir


def _op_records(tmp_path, *argv: str) -> tuple[int, dict[str, dict], str]:
    process = lse_fuzz("grade", str(tmp_path / "batch"), "--op", "merge_state", "--device", "cpu",
                       "--out-dir", str(tmp_path / "out"), *(argv if "--budget" in argv else ("--budget", "10", *argv)),
                       cwd=tmp_path)
    try:
        _, err = process.communicate(timeout=180)
    finally:
        process.kill()
    lines = (tmp_path / "out" / "grade-merge_state.jsonl").read_text().splitlines()
    return process.returncode, {json.loads(line)["candidate"].rpartition("/")[2]: json.loads(line) for line in lines}, err


def test_an_ops_batch_blames_a_candidate_that_stops_the_grader_and_is_not_held_by_it(tmp_path):
    # An op's grade (--op merge_state) runs each candidate in a child process of its own; its guard's
    # watchdog continues the grader, and the stop, made while the stopper ran alone, is blamed on it.
    _op_batch(tmp_path, "os.kill(os.getppid(), signal.SIGSTOP)")
    code, records, err = _op_records(tmp_path, "-j", "1")
    assert {name: r["verdict"] for name, r in records.items()} == {"a_attacker.py": "crash", "b_neighbour.py": "pass"}, err
    assert "it attacked the grader: it stopped the grader (SIGSTOP), which was continued" in records["a_attacker.py"]["report"]
    assert code == 1


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_an_ops_batch_ignores_a_candidates_signals_to_the_grader_and_blames_it(tmp_path, signum):
    _op_batch(tmp_path, f"os.kill(os.getppid(), signal.{signum})")
    code, records, err = _op_records(tmp_path, "-j", "2")
    assert {name: r["verdict"] for name, r in records.items()} == {"a_attacker.py": "crash", "b_neighbour.py": "pass"}, err
    assert f"it attacked the grader: it sent {signum} to the grader (from pid" in records["a_attacker.py"]["report"]
    assert "which ignored it (graded anyway: PASS" in records["a_attacker.py"]["report"]
    assert code == 1


def test_an_ops_batch_obeys_a_signal_from_outside_and_resumes(tmp_path):
    # Ctrl-C (SIGINT from outside the batch): the children in flight are killed and left unrecorded,
    # the command ends at once (130), and --resume grades what is left.
    mark = tmp_path / "go"  # the first run's attacker waits for it, for good: in flight when Ctrl-C comes
    _op_batch(tmp_path, f"import time\n    while not os.path.exists({str(mark)!r}):\n        time.sleep(0.05)")
    process = lse_fuzz("grade", str(tmp_path / "batch"), "--op", "merge_state", "--device", "cpu", "--budget", "5",
                       "-j", "2", "--out-dir", str(tmp_path / "out"), cwd=tmp_path)
    report = tmp_path / "out" / "grade-merge_state.jsonl"
    try:
        deadline = time.monotonic() + 120
        while not (report.is_file() and report.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)  # the neighbour's record: the other one waits, in flight
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and "interrupted" in err, err
    assert [json.loads(line)["candidate"].rpartition("/")[2] for line in report.read_text().splitlines()] == \
        ["b_neighbour.py"]
    mark.touch()
    code, records, err = _op_records(tmp_path, "-j", "2", "--resume", "--budget", "5")
    assert "resumed: 1 candidates kept" in err and records["a_attacker.py"]["verdict"] == "pass", err


def test_an_ops_batch_outlives_a_candidate_that_kills_the_grader(tmp_path):
    # SIGKILL to the grader (its child's parent): the supervisor continues the batch as --resume
    # would; the killer, run alone next, kills again and is convicted; its neighbours pass.
    batch_dir = tmp_path / "batch"
    batch_dir.mkdir()
    merge = (IMPLEMENTATIONS / "merge_correct" / "torch_float64.py").read_text()
    (batch_dir / "a_neighbour.py").write_text(merge)
    (batch_dir / "b_killer.py").write_text(merge.replace("import torch\n", "import os\nimport signal\n\nimport torch\n", 1)
                                           .replace("    a, b = s_a.double()",
                                                    "    os.kill(os.getppid(), signal.SIGKILL)\n    a, b = s_a.double()"))
    (batch_dir / "c_neighbour.py").write_text(merge)
    process = lse_fuzz("grade", str(batch_dir), "--op", "merge_state", "--device", "cpu", "--budget", "10", "-j", "2",
                       "--out-dir", str(tmp_path / "out"), cwd=tmp_path)
    try:
        _, err = process.communicate(timeout=180)
    finally:
        process.kill()
    records = {json.loads(line)["candidate"].rpartition("/")[2]: json.loads(line)
               for line in (tmp_path / "out" / "grade-merge_state.jsonl").read_text().splitlines()}
    assert {name: r["verdict"] for name, r in records.items()} == \
        {"a_neighbour.py": "pass", "b_killer.py": "crash", "c_neighbour.py": "pass"}, err
    assert "the grader died while it ran alone" in records["b_killer.py"]["report"]
    assert process.returncode == 1 and err.count("the grader was killed (SIGKILL") == 2, err
    assert not (tmp_path / "out" / ".in-flight-merge_state.jsonl").exists()
