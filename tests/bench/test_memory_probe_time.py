"""bench/memory_probe_time.py: each probe's seconds read from the probe process's lines as they come."""

from __future__ import annotations

import json

import pytest
import torch

from bench.memory_probe_time import main, probe_times


def test_each_probe_is_timed_from_its_start_line_to_its_done_line():
    lines = [(0.5, "========= COMPUTE-SANITIZER"), (4.0, "lse-fuzz-probe probes 2"),
             (5.0, "lse-fuzz-probe 0 start 1 x 1"), (7.5, "lse-fuzz-probe 0 result"), (7.6, "lse-fuzz-probe 0 done"),
             (7.6, "lse-fuzz-probe 1 start 3 x 5"), (8.0, "lse-fuzz-probe 1 raised RuntimeError: no"), (8.2, "")]
    times = probe_times(lines)
    assert times["startup"] == 5.0 and times["total"] == 8.2
    assert times["probes"] == [{"probe": "1 x 1", "seconds": 2.6}]  # the one that raised has no end
    assert times["raised"] == ["lse-fuzz-probe 1 raised RuntimeError: no"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU host the tools run: a minute, not a test")
def test_on_the_cpu_the_probes_run_in_the_interpreter_and_the_tools_are_left_out(tmp_path, capsys):
    assert main(["reference:lse", "--modes", "plain-cold,tools-cold", "--out", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert "tools-cold left out" in out and "| plain-cold | plain | 0 |" in out
    (record,) = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert record["exit"] == 0 and len(record["probes"]) == 8 and record["startup"] > 0
    assert record["probes"][0]["probe"] == "1 x 1"
