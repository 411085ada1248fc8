"""fuzz.grading.snapshot: what a batch grades is what was submitted, across the runs of a batch too.

A candidate can append to its neighbours' files while it is graded. Within one run each file is
read once, when the run starts; a candidate that also kills the grader ends that run, and
``--resume`` used to read the files again, tampered: 60 of 61 records of a hostile batch on an
H200 were ``load_error`` ("sabotaged by a neighbour"). These tests tamper while a run is alive
(its heartbeat fresh, or before its recorded end) and edit after a run ended, and check which
bytes the next run grades.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from pathlib import Path

from fuzz.grading import Candidate
from fuzz.grading.snapshot import HEARTBEAT, SUBMITTED, materialize, take

ORIGINAL = b"def lse(x):\n    return x\n"
SABOTAGE = b"\nraise ImportError('sabotaged by a neighbour')\n"


def _candidate(path: Path) -> Candidate:
    return Candidate(name=path.name, path=str(path), target=f"{path}:lse")


def _batch(tmp_path: Path) -> tuple[Candidate, Path]:
    path = tmp_path / "batch" / "neighbour.py"
    path.parent.mkdir()
    path.write_bytes(ORIGINAL)
    return _candidate(path), tmp_path / "out"


def _graded_bytes(submission, candidate: Candidate) -> bytes:
    return base64.b64decode(submission.sources[candidate.target])


def _after_a_tick() -> None:
    time.sleep(0.05)  # file times tick in milliseconds: a change lands after the run's start


def test_a_run_pins_each_file_s_bytes_and_digest(tmp_path):
    candidate, out = _batch(tmp_path)
    out.mkdir()
    submission = take([candidate], out, resume=False)
    [pinned] = submission.candidates
    assert pinned.sha256 == hashlib.sha256(ORIGINAL).hexdigest() == pinned.digest
    assert _graded_bytes(submission, candidate) == ORIGINAL
    Path(candidate.path).write_bytes(ORIGINAL + SABOTAGE)
    assert pinned.sha256 == hashlib.sha256(ORIGINAL).hexdigest()  # the digest of what is graded, not of the file now
    private, mapping = materialize(pinned, submission.sources[candidate.target], home=tmp_path / "copies")
    assert Path(private.path).read_bytes() == ORIGINAL and mapping[private.path] == candidate.path
    assert json.loads((out / SUBMITTED).read_text())["files"][candidate.target]["source"] is not None


def test_resume_grades_as_submitted_a_file_changed_while_a_killed_run_was_alive(tmp_path):
    candidate, out = _batch(tmp_path)
    out.mkdir()
    take([candidate], out, resume=False)
    (out / HEARTBEAT).touch()  # the run beats, then dies without a word (SIGKILL): no end recorded
    _after_a_tick()
    Path(candidate.path).write_bytes(ORIGINAL + SABOTAGE)  # a neighbour, during that run
    resumed = take([candidate], out, resume=True)
    assert _graded_bytes(resumed, candidate) == ORIGINAL
    assert [c.target for c in resumed.changed_while_graded] == [candidate.target]
    assert resumed.candidates[0].sha256 == hashlib.sha256(ORIGINAL).hexdigest()
    # and again after a second death: the bytes of the first run are kept
    again = take([candidate], out, resume=True)
    assert _graded_bytes(again, candidate) == ORIGINAL and again.changed_while_graded


def test_resume_grades_as_submitted_a_file_changed_before_a_run_ended(tmp_path):
    candidate, out = _batch(tmp_path)
    out.mkdir()
    submission = take([candidate], out, resume=False)
    with submission.grading():
        _after_a_tick()
        Path(candidate.path).write_bytes(ORIGINAL + SABOTAGE)
    assert _graded_bytes(take([candidate], out, resume=True), candidate) == ORIGINAL


def test_a_file_edited_after_the_run_ended_is_graded_anew(tmp_path):
    candidate, out = _batch(tmp_path)
    out.mkdir()
    submission = take([candidate], out, resume=False)
    with submission.grading():
        pass
    _after_a_tick()
    Path(candidate.path).write_bytes(ORIGINAL + b"# fixed\n")  # a person, between runs
    resumed = take([candidate], out, resume=True)
    assert _graded_bytes(resumed, candidate) == ORIGINAL + b"# fixed\n" and not resumed.changed_while_graded


def test_a_file_edited_after_a_killed_run_s_last_beat_is_graded_anew(tmp_path):
    candidate, out = _batch(tmp_path)
    out.mkdir()
    take([candidate], out, resume=False)
    beat = out / HEARTBEAT
    beat.touch()
    past = time.time_ns() - 60 * 10**9
    os.utime(beat, ns=(past, past))  # it died a minute ago
    manifest = json.loads((out / SUBMITTED).read_text())
    manifest["files"][candidate.target]["taken_ns"] = past - 10**9
    (out / SUBMITTED).write_text(json.dumps(manifest))
    Path(candidate.path).write_bytes(ORIGINAL + b"# fixed\n")
    assert _graded_bytes(take([candidate], out, resume=True), candidate) == ORIGINAL + b"# fixed\n"


def test_without_resume_every_file_is_read_anew(tmp_path):
    candidate, out = _batch(tmp_path)
    out.mkdir()
    take([candidate], out, resume=False)
    (out / HEARTBEAT).touch()
    _after_a_tick()
    Path(candidate.path).write_bytes(ORIGINAL + SABOTAGE)
    assert _graded_bytes(take([candidate], out, resume=False), candidate) == ORIGINAL + SABOTAGE


def test_a_modification_time_set_back_does_not_hide_a_change(tmp_path):
    # The modification time is the writer's to set; the change time is the kernel's.
    candidate, out = _batch(tmp_path)
    out.mkdir()
    take([candidate], out, resume=False)
    (out / HEARTBEAT).touch()
    _after_a_tick()
    Path(candidate.path).write_bytes(ORIGINAL + SABOTAGE)
    os.utime(candidate.path, ns=(0, 0))
    assert _graded_bytes(take([candidate], out, resume=True), candidate) == ORIGINAL


def test_a_module_target_and_an_unreadable_file_have_no_bytes(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    module = Candidate(name="m", path="", target="m:lse")
    missing = _candidate(tmp_path / "gone.py")
    submission = take([module, missing], out, resume=False)
    assert submission.sources == {module.target: None, missing.target: None}
    assert [c.digest for c in submission.candidates] == [None, None]
