"""Sealed report records: with a private seed, a record a candidate edited in the report is
graded again on --resume instead of trusted; without one, nothing is sealed."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

from fuzz.cli import main
from fuzz.grading.seal import seal, seal_key, sealed

CANDIDATES = Path(__file__).resolve().parents[2] / "implementations" / "candidates"


def grade(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        return main(["grade", *argv]), err.getvalue()


def batch_of(directory: Path, names: dict[str, str]) -> Path:
    directory.mkdir(parents=True)
    for new, old in names.items():
        shutil.copy(CANDIDATES / f"{old}.py", directory / f"{new}.py")
    return directory


def records_in(out: Path) -> dict[str, dict]:
    return {Path(r["candidate"]).stem: r for r in map(json.loads, (out / "grade.jsonl").read_text().splitlines())}


def test_a_seal_holds_for_the_record_it_was_made_for_only():
    key = seal_key("correct horse")
    record = seal({"verdict": "fail", "target": "a.py:lse", "seconds": 1.5}, key)
    assert sealed(record, key) and sealed(json.loads(json.dumps(record)), key)
    assert not sealed(dict(record, verdict="pass"), key)
    assert not sealed(record, seal_key("another secret"))
    assert not sealed({k: v for k, v in record.items() if k != "seal"}, key)
    assert seal_key(None) is None and seal(record, None) is record and sealed({"verdict": "pass"}, None)


def test_resume_grades_again_a_record_edited_without_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("LSE_TEST_SECRET", "hunter2-seal")
    batch_dir = batch_of(tmp_path / "batch", {"a": "wrong_type", "b": "raises"})
    out = tmp_path / "out"
    common = ["--budget", "10", "--max-elements", "1024", "-q", "--out-dir", str(out), "--private-seed",
              "env:LSE_TEST_SECRET"]
    assert grade(str(batch_dir), *common)[0] == 1
    first = records_in(out)
    assert all(isinstance(r.get("seal"), str) for r in first.values())
    # A candidate's edit: its own record to pass, as a forger would, with the seal it cannot remake.
    lines = [json.loads(line) for line in (out / "grade.jsonl").read_text().splitlines()]
    for line in lines:
        if line["candidate"].endswith("a.py"):
            line.update(verdict="pass", check=None, reason="8 examples passed every check")
    (out / "grade.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    monkeypatch.setenv("LSE_TEST_SECRET", "hunter2-seal")  # read and removed by each run
    code, err = grade(str(batch_dir), *common, "--resume")
    assert code == 1 and "resumed: 1 candidates kept" in err
    assert records_in(out)["a"]["verdict"] == first["a"]["verdict"] != "pass"


def test_without_a_private_seed_records_carry_no_seal(tmp_path):
    batch_dir = batch_of(tmp_path / "batch", {"a": "wrong_type"})
    out = tmp_path / "out"
    grade(str(batch_dir), "--budget", "5", "--max-elements", "1024", "-q", "--out-dir", str(out))
    assert "seal" not in records_in(out)["a"]
