"""The grading record (fuzz.grading.record): typed in the grader, the same JSON in the reports, read
back by --resume exactly as written (a sealed record still verifies), and refused when malformed."""

from __future__ import annotations

import copy
import json

import pytest

from fuzz.grading import Candidate, GradeOptions, GradeRecord, MalformedRecord
from fuzz.grading.evaluate import base_record
from fuzz.grading.reports import read_records, well_formed, write_reports
from fuzz.grading.seal import seal, sealed
from fuzz.outcomes import Verdict

# The keys of every record the grader writes: the report's shape, which the typed record keeps.
KEYS = {"candidate", "target", "sha256", "verdict", "check", "reason", "details", "exception", "counterexample",
        "reproducer", "replay", "examples", "calls", "seconds", "candidate_seconds", "flags", "slow", "compiles",
        "noise", "bench", "shape_fit", "seed", "seed_id", "key", "options", "tool"}


def _line(**changes) -> dict:
    record = base_record(Candidate("a.py", "", "a.py:lse"), GradeOptions(budget=5).validated())
    record.sha256 = "ab12"
    record.verdict, record.examples, record.calls, record.seconds = Verdict.FAIL, 3, 9, 1.25
    record.check, record.reason, record.replay = "agreement", "check 'agreement' failed", "lse-fuzz replay x.pt"
    record.flags = [{"flag": "environment", "severity": "info", "message": "reads os.environ", "lines": [3]}]
    record.slow = [{"seconds": 2.5, "call": "lse(x)"}]
    record.result = {"status": "failed", "seconds": 1.0}
    data = record.to_json()
    data.update(changes)
    return data


def test_a_record_written_has_the_reports_keys_and_no_more():
    record = base_record(Candidate("a.py", "", "a.py:lse"), GradeOptions().validated())
    assert set(record.to_json()) == KEYS  # no result, no parts: a run that has none writes none
    assert set(_line()) == KEYS | {"result"}


def test_a_line_read_back_is_the_same_json_byte_for_byte():
    data = _line(parts=[{"part": 0, "verdict": "pass"}], node="host-3", seal="00ff")
    record = GradeRecord.from_json(copy.deepcopy(data))
    assert record.verdict is Verdict.FAIL and record.check == "agreement" and record.extra == {"node": "host-3",
                                                                                               "seal": "00ff"}
    assert json.dumps(record.to_json(), sort_keys=True) == json.dumps(data, sort_keys=True)
    assert not record.passed and GradeRecord.from_json(_line(verdict="pass")).passed


def test_a_sealed_record_still_verifies_after_it_is_read(tmp_path):
    key = b"k" * 32
    record = GradeRecord.from_json(seal(_line(), key))
    write_reports([record], tmp_path)
    (again,) = read_records(tmp_path / "grade.jsonl")
    assert again == record and sealed(again.to_json(), key)
    again.verdict = Verdict.PASS  # what a candidate that rewrote the report would do
    assert not sealed(again.to_json(), key)


def test_an_older_report_without_the_later_fields_is_still_read():
    data = {key: value for key, value in _line().items() if key not in ("compiles", "seed", "seed_id", "tool")}
    record = GradeRecord.from_json(data)
    assert record.compiles is None and record.seed is None and record.verdict is Verdict.FAIL


MALFORMED = [
    ({"verdict": "passed"}, "verdict='passed': not a verdict"),
    ({"verdict": None}, "verdict=None: expected str"),
    ({"seconds": "1.5"}, "seconds='1.5': expected int or float"),
    ({"examples": True}, "examples=True: expected int or NoneType"),
    ({"flags": [{"message": "no name"}]}, "flags: each must be an object with a flag name"),
    ({"flags": "x"}, "flags='x': expected list"),
    ({"slow": [{"call": "lse(x)"}]}, "slow: each call must be an object with its seconds"),
    ({"shape_fit": {"max_elements": 3}}, "shape_fit: it has no description"),
    ({"options": []}, "options=[]: expected dict"),
]


@pytest.mark.parametrize("change, message", MALFORMED, ids=[next(iter(c)) + "_" + str(i) for i, (c, _) in
                                                           enumerate(MALFORMED)])
def test_a_malformed_line_is_refused_naming_the_field(change, message):
    with pytest.raises(MalformedRecord, match="^" + message.replace("[", r"\[").replace("]", r"\]") .replace(
            "(", r"\(").replace(")", r"\)")):
        GradeRecord.from_json(_line(**change))
    assert not well_formed(_line(**change)) and well_formed(_line())


def test_a_missing_field_and_a_non_object_are_refused():
    data = _line()
    del data["target"]
    with pytest.raises(MalformedRecord, match="target=None"):
        GradeRecord.from_json(data)
    with pytest.raises(MalformedRecord, match="not list"):
        GradeRecord.from_json([])


def test_malformed_lines_are_skipped_when_a_report_is_read(tmp_path):
    good = _line()
    (tmp_path / "grade.jsonl").write_text("\n".join([json.dumps(good), "{not json", json.dumps(_line(verdict="x")),
                                                     json.dumps([1, 2])]) + "\n")
    assert [r.to_json() for r in read_records(tmp_path / "grade.jsonl")] == [good]


def test_resume_keeps_a_record_only_of_an_unchanged_file(tmp_path):
    from fuzz.grading.batch import _kept

    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    options = GradeOptions().validated()
    graded = [Candidate("a.py", str(path), f"{path}:lse"), Candidate("m", "", "m:lse")]  # a file, a module
    records = [base_record(candidate, options) for candidate in graded]
    for record in records:
        record.verdict = Verdict.PASS
    write_reports(records, tmp_path)
    kept = _kept(tmp_path, graded, options.key())
    assert list(kept) == [graded[0].target] and kept[graded[0].target] == records[0]  # no hash, no proof: again
    assert _kept(tmp_path, graded, GradeOptions(budget=7).validated().key()) == {}  # other options
    path.write_text("x = 2\n")
    assert _kept(tmp_path, graded, options.key()) == {}  # another file
