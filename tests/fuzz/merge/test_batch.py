"""An op's batch on disk: records as candidates end, --resume, and a killer of the grader convicted
(the children stand in: what is tested here is what the batch keeps, not the fuzzing)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys

import pytest

import fuzz.merge.batch as batch
from fuzz.cli import main
from fuzz.grading.candidates import discover
from fuzz.merge.child_run import ChildRun
from fuzz.outcomes import Verdict

OPTIONS = {"op": "merge_state", "budget": 5, "seed": 0, "device": "cpu", "lse_base": "e", "checks": None,
           "dtypes": None, "layouts": None, "profile": None, "shrink_seconds": None, "reproducer_dir": None}


@pytest.fixture
def files(tmp_path):
    folder = tmp_path / "batch"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.py").write_text(f"def merge_state(v_a, s_a, v_b, s_b):  # {name}\n    pass\n")
    return folder


@pytest.fixture
def runs(monkeypatch):
    """The children stand-ins: each records the target it ran, and passes unless told otherwise."""
    ran, verdicts = [], {}

    def run_in_child(options, *, timeout, on_start=None):
        name = options["target"].rpartition(":")[0].rpartition("/")[2]
        ran.append(name)
        verdict = verdicts.get(name, Verdict.PASS)
        return ChildRun(verdict, f"{verdict.label} {name}", {"check": None}, seconds=0.5)

    monkeypatch.setattr(batch, "run_in_child", run_in_child)
    return ran, verdicts


def graded(files, tmp_path, *, resume=False, jobs=1, key="k1"):
    run = batch.OpBatch(discover([str(files)], function="merge_state"), OPTIONS, out=tmp_path / "out", key=key,
                        timeout=60, jobs=jobs, resume=resume)
    return run, {r["candidate"].rpartition("/")[2]: r for r in run.records()}


def report(tmp_path):
    return [json.loads(line) for line in (tmp_path / "out" / "grade-merge_state.jsonl").read_text().splitlines()]


def test_each_record_is_on_disk_in_the_candidates_order_with_its_key_and_file_hash(files, tmp_path, runs):
    ran, verdicts = runs
    verdicts["b.py"] = Verdict.FAIL
    _, records = graded(files, tmp_path, jobs=2)
    assert sorted(ran) == ["a.py", "b.py", "c.py"]
    on_disk = report(tmp_path)
    assert [r["candidate"].rpartition("/")[2] for r in on_disk] == ["a.py", "b.py", "c.py"]
    assert [r["verdict"] for r in on_disk] == ["pass", "fail", "pass"]
    assert all(r["key"] == "k1" and len(r["sha256"]) == 64 for r in on_disk)
    assert not (tmp_path / "out" / ".in-flight-merge_state.jsonl").exists()  # the run ended itself


def test_resume_keeps_unchanged_records_and_grades_changed_files_and_other_options_again(files, tmp_path, runs):
    ran, _ = runs
    graded(files, tmp_path)
    ran.clear()
    _, records = graded(files, tmp_path, resume=True)
    assert ran == [] and len(records) == 3  # every record kept
    (files / "b.py").write_text("def merge_state(v_a, s_a, v_b, s_b):  # b, changed\n    pass\n")
    run, _ = graded(files, tmp_path, resume=True)
    assert ran == ["b.py"] and len(run.kept) == 2
    ran.clear()
    graded(files, tmp_path, resume=True, key="k2")  # other options: every record graded again
    assert ran == ["a.py", "b.py", "c.py"]


def test_a_record_of_the_harnesss_own_failure_is_graded_again_on_resume(files, tmp_path, runs):
    ran, verdicts = runs
    verdicts["c.py"] = Verdict.INTERNAL_ERROR
    graded(files, tmp_path)
    ran.clear()
    verdicts.clear()
    _, records = graded(files, tmp_path, resume=True)
    assert ran == ["c.py"] and records["c.py"]["verdict"] == "pass"


def _died_during(files, tmp_path, *, alone: bool, names=("b.py",)):
    """The journal a grader leaves when it dies with ``names`` in flight (``alone``: run alone)."""
    run = batch.OpBatch(discover([str(files)], function="merge_state"), OPTIONS, out=tmp_path / "out", key="k1",
                        timeout=60, jobs=1, resume=False)
    (tmp_path / "out").mkdir(exist_ok=True)
    run.journal.begin()
    for candidate in run.candidates:
        if candidate.target.rpartition(":")[0].endswith(names):
            run.journal.started(candidate, alone=alone)


def test_candidates_in_flight_at_the_graders_death_run_first_each_alone(files, tmp_path, runs):
    ran, _ = runs
    _died_during(files, tmp_path, alone=False, names=("a.py", "c.py"))
    _, records = graded(files, tmp_path, resume=True, jobs=3)
    assert ran[:2] == ["c.py", "a.py"]  # the one started last first
    assert {r["verdict"] for r in records.values()} == {"pass"}


def test_a_candidate_running_alone_when_the_grader_died_is_convicted_not_run_again(files, tmp_path, runs):
    ran, _ = runs
    _died_during(files, tmp_path, alone=True)
    _, records = graded(files, tmp_path, resume=True, jobs=2)
    assert sorted(ran) == ["a.py", "c.py"]
    assert records["b.py"]["verdict"] == "crash" and "the grader died while it ran alone" in records["b.py"]["report"]


def test_without_resume_a_dead_runs_journal_is_forgotten(files, tmp_path, runs):
    ran, _ = runs
    _died_during(files, tmp_path, alone=True)
    _, records = graded(files, tmp_path)
    assert sorted(ran) == ["a.py", "b.py", "c.py"] and records["b.py"]["verdict"] == "pass"


def test_a_dead_runs_leftover_child_is_killed_before_the_next_run(files, tmp_path, runs):
    run = batch.OpBatch(discover([str(files)], function="merge_state"), OPTIONS, out=tmp_path / "out", key="k1",
                        timeout=60, jobs=1, resume=False)
    token = run.journal.begin()
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, **token})
    try:
        graded(files, tmp_path, resume=True)
        assert orphan.wait(timeout=10) == -signal.SIGKILL
    finally:
        orphan.kill()


def test_an_existing_report_is_neither_overwritten_nor_continued_unasked(files, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "grade-merge_state.jsonl").write_text("")
    argv = ["grade", str(files), "--op", "merge_state", "--device", "cpu", "--out-dir", str(out)]
    assert main(argv) == 2
    assert "already holds a report of --op merge_state: pass --resume to continue it" in capsys.readouterr().err
    assert main([*argv, "--resume", "--overwrite"]) == 2
    assert "--resume and --overwrite contradict each other" in capsys.readouterr().err


class _Guard:
    """A guard's stand-in: every candidate's run is claimed with the events given for its file."""

    def __init__(self, events):
        self.events, self.claimed = events, []

    def claim(self, key=None, processes=()):
        self.claimed.append((key, processes))
        return self.events.get(key.rpartition(":")[0].rpartition("/")[2], [])


def test_a_candidate_whose_process_signalled_the_grader_crashes_whatever_its_run_said(files, tmp_path, runs):
    from fuzz.isolation import SignalEvent
    from fuzz.isolation.guard.signals import Sender, Stopped

    guard = _Guard({"a.py": [SignalEvent(signal.SIGTERM, 4242, Sender.RUN, (4242,))],
                    "b.py": [SignalEvent(signal.SIGSTOP, 0, Sender.UNNAMED, (), ("b",), Stopped.GRADER, 7)]})
    run = batch.OpBatch(discover([str(files)], function="merge_state"), OPTIONS, out=tmp_path / "out", key="k1",
                        timeout=60, jobs=1, resume=False, guard=guard)
    records = {r["candidate"].rpartition("/")[2]: r for r in run.records()}
    assert [r["verdict"] for r in records.values()] == ["crash", "crash", "pass"]
    assert "it attacked the grader: it sent SIGTERM to the grader (from pid 4242), which ignored it (graded anyway: " \
           "PASS a.py)" in records["a.py"]["report"]
    assert "it stopped the grader (SIGSTOP), which was continued" in records["b.py"]["report"]
    assert records["a.py"]["check"] is None and len(guard.claimed) == 3


def test_the_candidates_in_flight_between_two_moments_are_named(files, tmp_path):
    run = batch.OpBatch(discover([str(files)], function="merge_state"), OPTIONS, out=tmp_path / "out", key="k1",
                        timeout=60, jobs=1, resume=False)
    run._spans = {"a": (1.0, 2.0), "b": (1.5, None), "c": (3.0, 4.0)}
    assert run._in_flight(2.5) == ("b", "c") and run._in_flight(0.0, 1.2) == ("a",)
    assert run._in_flight(2.1, 2.9) == ("b",)


SABOTAGE = "\nraise ImportError('sabotaged by a neighbour')\n"


@pytest.fixture
def tampering(monkeypatch, files):
    """Stand-ins that read the file they were given to run: a.py's appends to c.py as it runs, and
    ``dies`` makes a.py's end the grader's run (as a grader-killer's would, unheard)."""
    seen, dies = {}, []

    def run_in_child(options, *, timeout, on_start=None):
        path = options["target"].rpartition(":")[0]
        name = path.rpartition("/")[2]
        seen[name] = (path, open(path).read())
        if name == "a.py":
            with open(files / "c.py", "a") as neighbour:
                neighbour.write(SABOTAGE)
            if dies:
                raise RuntimeError("the grader died")
        verdict = Verdict.LOAD_ERROR if "sabotaged" in seen[name][1] else Verdict.PASS
        return ChildRun(verdict, f"{verdict.label} {options['target']}", {"check": None}, seconds=0.1)

    monkeypatch.setattr(batch, "run_in_child", run_in_child)
    return seen, dies


def test_a_neighbour_rewriting_a_file_changes_nothing_graded(files, tmp_path, tampering):
    seen, _ = tampering
    original = (files / "c.py").read_text()
    _, records = graded(files, tmp_path)
    assert seen["c.py"][1] == original and (files / "c.py").read_text() == original + SABOTAGE
    assert seen["c.py"][0] != str(files / "c.py")  # a private copy ran
    c = records["c.py"]
    assert c["verdict"] == "pass" and c["sha256"] == hashlib.sha256(original.encode()).hexdigest()
    assert c["report"] == f"PASS {files / 'c.py'}:merge_state"  # the copy's path named as the original
    assert (tmp_path / "out" / ".submitted-merge_state.json").is_file()
    assert not (tmp_path / "out" / ".submitted.json").exists()  # the row LSE's batch's name stays free


def test_resume_grades_as_submitted_a_file_a_candidate_changed_while_the_run_was_alive(files, tmp_path, tampering,
                                                                                       capsys):
    seen, dies = tampering
    original = (files / "c.py").read_text()
    dies.append(True)
    with pytest.raises(RuntimeError):
        graded(files, tmp_path)
    dies.clear()
    run, records = graded(files, tmp_path, resume=True)
    assert seen["c.py"][1] == original and records["c.py"]["verdict"] == "pass"
    assert [c.name.rpartition("/")[2] for c in run.submission.changed_while_graded] == ["c.py"]
    (files / "c.py").write_text(original.replace("# c", "# c, fixed"))  # a person's edit after the run ended
    _, records = graded(files, tmp_path, resume=True)
    assert "fixed" in seen["c.py"][1]
