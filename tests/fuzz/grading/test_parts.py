"""A run's examples in parts of derived seeds, side by side or one after another (fuzz.grading.parts)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from fuzz.grading import GradeOptions, GradeRecord, cpu_slots, part_queue
from fuzz.grading.evaluate import evaluate
from fuzz.costs import Costs
from fuzz.grading.parts import CPU_PARTS, GPU_PARTS, MIN_PART_BUDGET, decided, merge_parts, part_count, split
from fuzz.grading.reports import format_record, well_formed
from fuzz.isolation import JobResult
from fuzz.outcomes import ImplLost, Outcome, Verdict
from reference.errors import InvalidArgument

IMPLEMENTATIONS = Path(__file__).resolve().parents[2] / "implementations"
CORRECT = f"{IMPLEMENTATIONS / 'correct' / 'torch_float32.py'}:lse"
BUGGY = f"{IMPLEMENTATIONS / 'candidates' / 'buggy_no_max.py'}:lse"


@pytest.mark.parametrize(("options", "expected"), [
    ({}, CPU_PARTS),
    ({"budget": CPU_PARTS * MIN_PART_BUDGET - 1}, 1),
    ({"budget": 5}, 1),
    ({"device": "cuda"}, GPU_PARTS),
    ({"device": "cuda:1", "budget": 2 * MIN_PART_BUDGET}, 2),
    ({"device": "cuda", "budget": 5}, 1),
    ({"parts": 3}, 3),
    ({"parts": 8, "budget": 5}, 5),
], ids=["cpu_default", "small_budget", "tiny_budget", "gpu", "gpu_small_budget", "gpu_tiny_budget", "explicit",
        "never_more_than_the_budget"])
def test_how_many_parts(options, expected):
    assert part_count(GradeOptions(**options)) == expected


def test_parts_must_be_a_positive_integer():
    with pytest.raises(InvalidArgument, match=r"--parts=0"):
        GradeOptions(parts=0).validated(cli=True)


def test_the_parts_share_the_budget_and_the_first_keeps_the_seed():
    options = GradeOptions(budget=201, seed=7).validated()
    parts = split(options, 2, max_elements=4096)
    assert [part.budget for part in parts] == [101, 100]
    assert parts[0].effective_seed == 7 and parts[1].effective_seed != 7
    assert all(part.parts == 1 and part.max_elements == 4096 and not part.fit_shapes for part in parts)
    assert [p.effective_seed for p in split(options, 2, max_elements=None)] == [p.effective_seed for p in parts]
    other = split(GradeOptions(budget=201, seed=8).validated(), 2, max_elements=None)
    assert other[1].effective_seed != parts[1].effective_seed


def test_a_private_seed_reaches_the_parts_only_derived():
    options = GradeOptions(private_seed="hunter2").validated()
    for part in split(options, 2, max_elements=None):
        assert part.private_seed is None and "hunter2" not in repr(part.to_wire())
    assert split(options, 2, max_elements=None)[0].effective_seed == options.effective_seed


def _part(verdict: str, examples: int, *, check: str | None = None, flags=()) -> GradeRecord:
    return GradeRecord(candidate="c.py", target="c.py:lse", sha256=None, key="k", verdict=Verdict(verdict),
                       check=check, reason=f"{verdict} reason", details=f"{verdict} details",
                       replay=f"replay {verdict}", result={"examples": examples}, examples=examples,
                       calls=3 * examples, seconds=1.0, candidate_seconds=0.5, flags=list(flags),
                       slow=[{"seconds": 2.0}])


def _base() -> GradeRecord:
    return GradeRecord(candidate="c.py", target="c.py:lse", sha256=None, key="k",
                       flags=[{"flag": "environment", "message": "reads os.environ"}])


def test_the_first_failing_part_in_part_order_decides():
    parts = [_part("pass", 100), _part("fail", 12, check="shift_invariance"), _part("crash", 3)]
    record = merge_parts(_base(), parts)
    assert record.verdict == "fail" and record.check == "shift_invariance"
    assert record.replay == "replay fail" and record.reason == "fail reason (part 2 of 3)"
    assert record.examples == 115 and record.calls == 345 and record.candidate_seconds == 1.5
    assert len(record.slow) == 3
    assert [p["verdict"] for p in record.parts] == ["pass", "fail", "crash"]


def test_each_part_shows_its_own_compiles_and_when_it_ended():
    # Which part paid for the binaries every part draws (they share Triton's cache) is where a verdict waits.
    first, second = _part("pass", 100), _part("pass", 100)
    first.costs = Costs(compiles=31, compile_seconds=20.5).to_dict()
    second.costs = Costs(compiles=9, compile_seconds=4.0).to_dict()
    first.extra["ended"], second.extra["ended"] = 31.6, 27.0  # seconds from the parts' start
    record = merge_parts(_base(), [first, second, _part("pass", 100)])
    assert [(p.get("compiles"), p.get("compiling_seconds")) for p in record.parts] == [(31, 20.5), (9, 4.0), (None, None)]
    assert [p.get("ended") for p in record.parts] == [31.6, 27.0, None] and "ended" not in record.to_json()
    assert record.costs["compiles"] == 40
    # and the rest of each part's costs: how many launch classes it drew, where its time went
    assert [(p.get("costs") or {}).get("compiles") for p in record.parts] == [31, 9, None]


def test_the_parts_that_decide_end_at_the_first_that_did_not_pass():
    passed, failed, crashed = _part("pass", 100), _part("fail", 12), _part("crash", 3)
    assert decided([passed, failed, crashed]) == [passed, failed]
    assert decided([crashed, passed]) == [crashed]
    assert decided([passed, passed]) == [passed, passed]


def test_an_unsupported_part_decides_nothing_alone_a_failure_wins():
    """A part that met a construct the CPU cannot run gives no verdict: the parts after it run on,
    a failure in any part wins, and the run is unsupported only when no part failed."""
    passed, unsupported, failed = _part("pass", 100), _part("unsupported", 1), _part("fail", 12, check="agreement")
    assert decided([unsupported, failed, passed]) == [unsupported, failed]
    assert decided([passed, unsupported]) == [passed, unsupported]
    record = merge_parts(_base(), [unsupported, failed])
    assert record.verdict == "fail" and record.check == "agreement" and record.reason == "fail reason (part 2 of 2)"
    record = merge_parts(_base(), [passed, unsupported])
    assert record.verdict == "unsupported" and record.reason == "unsupported reason (part 2 of 2)"
    assert record.examples == 101


def test_passing_parts_add_up_and_flags_are_not_repeated():
    flag = {"flag": "environment", "message": "reads os.environ"}
    record = merge_parts(_base(), [_part("pass", 100, flags=[flag]), _part("pass", 100, flags=[flag])])
    assert record.verdict == "pass" and record.examples == 200
    assert record.reason == "200 examples passed every check (in 2 parts)"
    assert record.flags == [flag]


def test_the_largest_input_drawn_is_the_largest_of_every_part():
    small, wide = _part("pass", 100), _part("pass", 100)
    small.result["largest"] = {"shape": [300, 3], "description": "900 elements"}
    wide.result["largest"] = {"shape": [2, 4096], "description": "8192 elements"}
    record = merge_parts(_base(), [small, wide])
    assert record.result["largest"]["description"] == "8192 elements"
    assert "largest" not in merge_parts(_base(), [_part("pass", 1)]).result
    assert small.result["largest"]["description"] == "900 elements"  # the part's own record is not changed


@pytest.fixture(autouse=True)
def own_cpu_slots(tmp_path, monkeypatch):
    """Slots of this test's own: other tests running at the same time take none of them."""
    monkeypatch.setattr(cpu_slots, "default_directory", lambda: tmp_path / "cpu-slots")


def test_a_run_whose_slots_are_taken_runs_its_parts_here_one_after_another(tmp_path, monkeypatch):
    evaluate_module = sys.modules[evaluate.__module__]

    def no_helper(*args, **kwargs):
        raise AssertionError("a helper started with every CPU slot taken")

    monkeypatch.setattr(evaluate_module, "Pool", no_helper)
    workers, real = set(), evaluate_module.check

    def counting(impl, **kwargs):
        workers.add(impl.pid)
        return real(impl, **kwargs)

    monkeypatch.setattr(evaluate_module, "check", counting)
    with cpu_slots.take(os.cpu_count() or 1):
        record = evaluate(CORRECT, GradeOptions(budget=12, parts=2).validated(), reproducer_dir=tmp_path,
                          side_by_side=True)
    assert record.verdict == "pass", record.reason
    assert [p["examples"] for p in record.parts] == [6, 6]
    first, second = record.parts
    assert second["ended"] - second["seconds"] + 0.05 >= first["ended"]  # the second began once the first ended
    assert len(workers) == 1  # in one worker: on a busy GPU host a worker's start costs seconds
    assert len(cpu_slots.take(2)) == 2  # the run gave its slots back


def test_a_slot_given_back_during_the_run_starts_a_helper_for_the_next_part(tmp_path, monkeypatch):
    # Eight checks at once on a GPU host: the last ones found no slot at their start, and ran every
    # part one after another while the first ones' slots came back. Now a freed slot starts a part.
    evaluate_module = sys.modules[evaluate.__module__]
    helpers, real_pool = [], evaluate_module.Pool

    def counting_pool(*args, **kwargs):
        helpers.append(args)
        return real_pool(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "Pool", counting_pool)
    monkeypatch.setattr(part_queue, "POLL_SECONDS", 0.01)
    taken = cpu_slots.take(os.cpu_count() or 1)
    # Another run ends as part 0 starts: its slots come back while this run's parts wait.
    record = evaluate(CORRECT, GradeOptions(budget=90, parts=3).validated(), reproducer_dir=tmp_path,
                      side_by_side=True, on_loaded=taken.release)
    assert record.verdict == "pass", record.reason
    assert [p["examples"] for p in record.parts] == [30, 30, 30] and record.examples == 90
    assert len(helpers) >= 1  # a part ran beside part 0 once the slots came back
    assert len(cpu_slots.take(os.cpu_count() or 1)) == (os.cpu_count() or 1)  # every slot given back


def test_a_part_lost_here_stops_the_helpers_at_once(tmp_path, monkeypatch):
    # A crash (or timeout) of the run's own worker says nothing to the other parts by itself; they
    # could not change the verdict, so the run tells them to stop instead of waiting for them.
    evaluate_module = sys.modules[evaluate.__module__]
    told = []

    class UntilStopped:
        """A helper's pool whose part runs until the run's parts are told to stop (20 s at most)."""

        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def close(self):
            pass

        def run(self, jobs):
            job = jobs[0]
            directory = Path(GradeOptions.from_wire(job.payload["options"]).stop_dir)
            deadline = time.monotonic() + 20
            while not any(directory.iterdir()) and time.monotonic() < deadline:
                time.sleep(0.01)
            told.append(time.monotonic() < deadline)
            yield JobResult(job, Outcome.TIMEOUT, None, 0.0, "stopped by the test")

    def lost(*args, **kwargs):
        raise ImplLost(Outcome.CRASHED, "the worker died (the test's)")

    monkeypatch.setattr(evaluate_module, "Pool", UntilStopped)
    monkeypatch.setattr(evaluate_module, "_fuzz", lost)
    record = evaluate(CORRECT, GradeOptions(budget=30, parts=3).validated(), reproducer_dir=tmp_path,
                      side_by_side=True)
    assert record.verdict == "crash" and record.parts[0]["verdict"] == "crash"
    assert told and all(told)  # every helper was told, long before its 20 s


@pytest.mark.parametrize("side_by_side", [False, True], ids=["one_after_another", "side_by_side"])
def test_a_correct_candidate_passes_in_parts(tmp_path, side_by_side):
    options = GradeOptions(budget=12, parts=2).validated()
    record = evaluate(CORRECT, options, reproducer_dir=tmp_path, side_by_side=side_by_side)
    assert record.verdict == "pass", record.reason
    assert record.examples == 12 and [p["examples"] for p in record.parts] == [6, 6]
    assert well_formed(record) and "(in 2 parts)" in format_record(record)
    # Side by side, each part says when it ended, from the parts' start: no sooner than it took.
    assert all(p["ended"] + 0.05 >= p["seconds"] for p in record.parts if "ended" in p)
    assert side_by_side or not any("ended" in p for p in record.parts)


def test_side_by_side_gives_what_one_after_another_gives(tmp_path):
    options = GradeOptions(budget=40, parts=2).validated()
    apart = evaluate(BUGGY, options, reproducer_dir=tmp_path / "a", side_by_side=True)
    together = evaluate(BUGGY, options, reproducer_dir=tmp_path / "b", side_by_side=False)
    assert apart.verdict == together.verdict == "fail"
    assert apart.check == together.check
    assert [(p["verdict"], p["check"], p["examples"]) for p in apart.parts] == \
           [(p["verdict"], p["check"], p["examples"]) for p in together.parts]
    assert apart.counterexample["description"] == together.counterexample["description"]
    # The first part fails: one after another stops there, and side by side reports the same.
    assert [p["verdict"] for p in together.parts] == ["fail"] and together.examples == apart.examples


def test_one_after_another_the_parts_share_one_worker_and_stop_at_the_first_failure(tmp_path, monkeypatch):
    evaluate_module = sys.modules[evaluate.__module__]  # the package's name "evaluate" is the function
    workers, seeds = set(), []
    real = evaluate_module.check

    def counting(impl, **kwargs):
        workers.add(impl.pid)
        seeds.append(kwargs["seed"])
        return real(impl, **kwargs)

    monkeypatch.setattr(evaluate_module, "check", counting)
    passing = evaluate(CORRECT, GradeOptions(budget=12, parts=3).validated(), reproducer_dir=tmp_path)
    assert passing.verdict == "pass" and len(passing.parts) == 3
    assert len(workers) == 1 and len(seeds) == 3 and len(set(seeds)) == 3  # three runs, one worker
    assert passing.calls > 0 and passing.examples == 12
    seeds.clear()
    failing = evaluate(BUGGY, GradeOptions(budget=30, parts=3).validated(), reproducer_dir=tmp_path)
    assert failing.verdict == "fail" and len(failing.parts) == 1
    assert len(seeds) == 1  # the first part failed: the other two never ran


def test_a_target_that_does_not_load_is_one_load_error(tmp_path):
    record = evaluate(f"{IMPLEMENTATIONS / 'candidates' / 'import_error.py'}:lse",
                      GradeOptions(budget=12, parts=2).validated(), reproducer_dir=tmp_path, side_by_side=False)
    assert record.verdict == "load_error" and record.parts is None and "parts" not in record.to_json()  # no part ran


def test_a_run_in_parts_measures_bandwidth_once_after_all_passed(tmp_path, monkeypatch):
    # On CUDA only (what is measured is stubbed here): no part measures, the run does once, in a
    # worker of its own that has loaded the target.
    evaluate_module = sys.modules[evaluate.__module__]
    measured = []

    def bench(impl, options, baselines):
        measured.append((impl.pid is not None, options.parts))
        return {"gbps": 1.0}

    monkeypatch.setattr(evaluate_module, "_benches", lambda options: options.bench)
    monkeypatch.setattr(evaluate_module, "bench_candidate", bench)
    options = GradeOptions(budget=12, parts=2, bench=True).validated()
    record = evaluate(CORRECT, options, reproducer_dir=tmp_path)
    assert record.verdict == "pass" and record.bench == {"gbps": 1.0}
    assert measured == [(True, 2)]
    failing = evaluate(BUGGY, GradeOptions(budget=12, parts=2, bench=True).validated(), reproducer_dir=tmp_path)
    assert failing.verdict == "fail" and failing.bench is None and len(measured) == 1
