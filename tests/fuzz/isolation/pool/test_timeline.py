"""The pool's timeline (fuzz.isolation.pool.timeline): what a batch's jobs did, and when."""

from __future__ import annotations

import json

from fuzz.isolation import Job, Pool
from fuzz.isolation.pool.timeline import TIMELINE_ENV, note_event


def events_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(TIMELINE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    note_event("start", key="a")
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_cannot_be_written_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv(TIMELINE_ENV, str(tmp_path / "missing" / "timeline.jsonl"))
    note_event("start", key="a")  # no error: a diagnostic is never the batch's failure


def test_each_start_end_and_fork_server_of_a_run_is_written_in_order(tmp_path, monkeypatch):
    timeline = tmp_path / "timeline.jsonl"
    monkeypatch.setenv(TIMELINE_ENV, str(timeline))
    with Pool(2, work_dir=tmp_path / "work") as pool:
        jobs = [Job("quick", "tests.implementations.pool_jobs:echo", {}),
                Job("killer", "tests.implementations.pool_jobs:kill_fork_server", {})]
        outcomes = {result.job.key: result.outcome.name for result in pool.run(jobs)}
    events = events_of(timeline)
    assert [e["t"] for e in events] == sorted(e["t"] for e in events)
    kinds = [e["event"] for e in events]
    assert kinds.count("fork_server") == 2  # the first, and the one started after the killer's death
    for key in ("quick", "killer"):
        starts = [e for e in events if e["event"] == "start" and e["key"] == key]
        ends = [e for e in events if e["event"] == "end" and e["key"] == key]
        assert starts and len(ends) == len(starts)
        assert ends[-1]["outcome"] == outcomes[key]
    assert [e["outcome"] for e in events if e["event"] == "end" and e["key"] == "killer"] == ["CRASHED", "CRASHED"]
