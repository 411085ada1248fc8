"""bench/verdict_time.py: what it runs and how it judges the times against the targets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("verdict_time", ROOT / "bench" / "verdict_time.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("verdict_time", module)  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_sets_hold_the_corpus_the_candidates_the_tuned_kernels_and_the_mutants():
    bench = _load()
    corpus = dict(bench.targets("corpus"))
    everything = dict(bench.targets("all"))
    assert corpus and all("/correct/" in target for target in corpus)
    assert set(corpus) < set(everything)
    # The autotuned kernels import a sibling module: they are module targets, not files.
    assert "tuned.autotuned:lse" in everything
    assert not any(target.endswith(("tuned/autotuned.py", "hang.py", "slow_fifth_call.py")) for target in everything)
    from mutants import NAMES

    assert {f"mutants.patched:{name}" for name in NAMES} <= set(everything)
    # A declaration of contracts.json becomes the check's options.
    declared = [options for target, options in corpus.items() if options]
    assert any(options[:2] == ["--ndim", "3"] for options in declared)
    assert ["--max-n", "65504"] in declared


def test_the_summary_says_which_target_is_met_and_which_missed():
    bench = _load()

    def runs(section, *seconds):
        return [bench.Run(section, f"t{i}", s, 0, "pass") for i, s in enumerate(seconds)]

    assert "(target 45: met)" in bench.summary(runs("checks -j 8", 20.0, 31.0, 80.0), "cuda")
    assert "(target 15: missed)" in bench.summary(runs("checks -j 1", 14.0, 26.0, 30.0), "cpu")
    alone = bench.summary(runs("alone", 12.0, 31.0), "cuda")
    assert "1 over 30 s: t1 31 s" in alone and "target" not in alone
    assert "1 over 30 s" in bench.summary(runs("mutants", 62.8), "cuda")
    assert bench.summary([], "cpu") == "no runs"


def test_on_the_cpu_the_summary_judges_the_triton_kernels_median_apart():
    bench = _load()
    kernel = {"specializations": 12}
    runs = [bench.Run("checks -j 1", "torch", 4.0, 0, "pass"), bench.Run("checks -j 1", "scipy", 5.0, 0, "pass"),
            bench.Run("checks -j 1", "k1", 14.0, 0, "pass", costs=kernel),
            bench.Run("checks -j 1", "k2", 17.0, 0, "pass", costs=kernel),
            bench.Run("checks -j 1", "k3", 18.0, 0, "pass", costs=kernel)]
    text = bench.summary(runs, "cpu")
    assert "median 14.0 s (target 15: met)" in text  # all five: the torch runs pull it down
    assert "the 3 Triton kernels: median 17.0 s (target 15: missed)" in text
    assert "Triton kernels" not in bench.summary(runs, "cuda")


def test_a_verdict_keeps_the_memory_phases_time_and_any_other_than_pass_or_fail_its_reason(monkeypatch):
    # An internal error under load is a finding to explain: its reason and details come with the run.
    import json
    import subprocess

    bench = _load()

    def checked(verdict, reason):
        def run(command, **kwargs):
            report = command[command.index("--json") + 1]
            Path(report).write_text(json.dumps({"verdict": verdict, "check": None, "reason": reason,
                                                "details": "x" * 5000 + "the end",
                                                "memory": {"ran": "compute-sanitizer memcheck", "seconds": 27.4,
                                                           "waited": 4.9, "notes": [], "replay": "a command"},
                                                "parts": [{"seconds": 31.6, "compiles": 40, "ended": 31.7},
                                                          {"seconds": 22.3, "compiles": 18, "ended": 27.5}]}))
            return subprocess.CompletedProcess(command, 3, "", "")

        monkeypatch.setattr(bench.subprocess, "run", run)
        return bench.run_check("t.py", [], "cuda", "checks -j 8", 10.0)

    failed = checked("internal_error", "the harness failed: the worker could not start cuda")
    assert failed.reason == "the harness failed: the worker could not start cuda"
    assert failed.details.endswith("the end") and len(failed.details) == 3000
    passed = checked("pass", "")
    assert (passed.reason, passed.details) == ("", "")
    # The memory phase's share of the time, for every verdict: how long the verdict waited for it.
    assert passed.memory == {"seconds": 27.4, "waited": 4.9, "notes": []}
    assert passed.parts == [31.6, 22.3] and passed.part_compiles == [40, 18]  # which part paid for the compiles
    assert passed.part_ended == [31.7, 27.5]  # and when each ran: part 1 started 5.2 s after part 0
