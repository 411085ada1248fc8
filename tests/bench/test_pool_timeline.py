"""bench/pool_timeline.py: a batch's timeline drawn as one bar per run of a job."""

from __future__ import annotations

import json

from bench.pool_timeline import main


def test_each_run_gets_a_bar_of_its_time_marked_by_how_it_ran(tmp_path, capsys):
    events = [
        {"t": 100.0, "event": "fork_server", "pid": 7},
        {"t": 100.0, "event": "start", "key": "/b/long.py:lse", "driver": 8},
        {"t": 100.0, "event": "start", "key": "/b/killer.py:lse", "driver": 9},
        {"t": 101.0, "event": "end", "key": "/b/killer.py:lse", "outcome": "CRASHED", "seconds": 1.0},
        {"t": 101.0, "event": "end", "key": "/b/long.py:lse", "outcome": "CRASHED", "seconds": 1.0},
        {"t": 101.5, "event": "fork_server", "pid": 10},
        {"t": 101.5, "event": "start", "key": "/b/long.py:lse", "driver": 11},
        {"t": 107.5, "event": "end", "key": "/b/long.py:lse", "outcome": "RETURNED", "seconds": 6.0},
        {"t": 108.0, "event": "phase", "key": "/b/killer.py:lse", "alone": True, "short": False},
        {"t": 108.0, "event": "start", "key": "/b/killer.py:lse", "driver": 12},
        {"t": 110.0, "event": "cut", "key": "/b/killer.py:lse", "seconds": 2.0, "limit": False},
        {"t": 110.0, "event": "suspect", "key": "/b/x.py:lse", "named": {"/b/x.py:lse": 3, "/b/long.py:lse": 1}},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main([str(path), "--step", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    runs = [line for line in lines if "|" in line]
    assert [line.split()[2] for line in runs] == ["long.py:lse", "killer.py:lse", "long.py:lse", "killer.py:lse"]
    assert runs[2].split()[3] == "RETURNED" and runs[2].split("|")[1] == " #######   "  # 1.5 s to 7.5 s, a character a second
    assert runs[3].split()[3] == "CUT" and runs[3].split("|")[1].strip() == "aaa"
    assert "   1.5 fork server started (pid 10)" in lines
    assert "  10.0 suspect x.py:lse; named: x.py:lse 3, long.py:lse 1" in lines


def test_an_empty_timeline_says_so(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text("")
    assert main([str(path)]) == 1
    assert "no events" in capsys.readouterr().err
