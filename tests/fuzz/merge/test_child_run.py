"""An op's run in a child process: how the child ended decides who is to blame."""

from __future__ import annotations

import fuzz.merge.child_run as child_run
from fuzz.outcomes import Verdict

OPTIONS = {"op": "merge_state", "target": "reference:merge_state", "budget": 5, "seed": 0, "device": "cpu",
           "lse_base": "e", "checks": None, "dtypes": None, "profile": None, "shrink_seconds": None,
           "reproducer_dir": None}


def test_a_child_that_ends_before_loading_the_target_is_the_harnesss_failure_not_a_crash(monkeypatch):
    monkeypatch.setattr(child_run.sys, "executable", "false")  # ends at once, status 1, nothing written
    ended = child_run.run_in_child(OPTIONS, timeout=30)
    assert ended.verdict is None and ended.internal.startswith("the run's process ended (status 1) before it loaded")


def test_a_run_ends_with_its_verdict(tmp_path):
    ended = child_run.run_in_child({**OPTIONS, "reproducer_dir": str(tmp_path)}, timeout=300)
    assert ended.verdict is Verdict.PASS and ended.result["examples"] == 5, ended.text
