"""Pieces of the local executor (fuzz.grading.local_executor) that end-to-end runs show only by their timing:
which suspect is graded again alone first, and when the others need not be."""

from __future__ import annotations

from grading_pools import InstantPool

from fuzz.grading.local_executor import next_suspect
from fuzz.isolation import Job
from fuzz.isolation.guard.blame import stop_event
from fuzz.isolation.guard.signals import SignalGuard, Stopped

FORK_SERVER = 11


def test_the_suspect_named_most_and_quickest_runs_alone_first_and_its_conviction_frees_the_rest():
    # The issue's batch at -j 2: a hanging import is in flight for every stop of the fork server,
    # the slow candidate for the first; the stopper for each. Graded again alone, the stopper (named
    # as often as the hang, and 7 s against 60 s) goes first; convicted, it explains those stops.
    guard = SignalGuard()  # not entered: only its list of events is used
    guard.add(stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("slow", "hang", "stopper")))
    guard.add(stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("hang", "stopper")))
    work = [Job(key, "m:f") for key in ("hang", "slow", "stopper")]
    seconds = {"hang": 60.0, "slow": 18.0, "stopper": 7.0}
    assert next_suspect(guard, work, set(), seconds).key == "stopper"
    alone = stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("stopper",))  # what it was convicted of
    guard.explained_by("stopper", like=[alone])
    assert next_suspect(guard, work, {"stopper"}, seconds) is None


def test_without_a_conviction_each_suspect_runs_alone_once():
    guard = SignalGuard()
    guard.add(stop_event(Stopped.DRIVER, 12, ("a", "b")))
    work = [Job(key, "m:f") for key in ("a", "b")]
    assert next_suspect(guard, work, set(), {"a": 5.0, "b": 1.0}).key == "b"
    assert next_suspect(guard, work, {"b"}, {"a": 5.0, "b": 1.0}).key == "a"
    assert next_suspect(guard, work, {"a", "b"}, {}) is None


def test_a_neighbour_beside_two_attackers_of_different_deeds_runs_after_them():
    # An orphan's signals name it and the neighbour; a stopper's stops name it and the neighbour.
    # Counted over every deed, the neighbour (4 events) came first; of one deed, each attacker (3
    # of its own) is named more often than the neighbour (2 of each).
    import signal

    from fuzz.isolation.guard.signals import Sender, SignalEvent

    guard = SignalGuard()
    for pid in (101, 102, 103):
        guard.add(SignalEvent(signal.SIGTERM, pid, Sender.RUN, (pid, FORK_SERVER),
                              ("orphan", "neighbour") if pid < 103 else ("orphan",)))
    for driver in (12, 13, 14):
        guard.add(stop_event(Stopped.DRIVER, driver, ("stopper", "neighbour") if driver < 14 else ("stopper",)))
    work = [Job(key, "m:f") for key in ("neighbour", "orphan", "stopper")]
    seconds = {"neighbour": 5.0, "orphan": 9.0, "stopper": 8.0}
    assert next_suspect(guard, work, set(), seconds).key == "stopper"
    assert next_suspect(guard, work, {"stopper"}, seconds).key == "orphan"
    assert next_suspect(guard, work, {"stopper", "orphan"}, seconds).key == "neighbour"


def test_a_short_run_alone_has_short_deadlines_and_the_full_run_the_batchs(tmp_path):
    # A suspect of the grader's death that hangs or sleeps runs briefly alone first, with nothing
    # else in flight: its calls' deadlines there are the short run's, not the batch's 60 s twice.
    from fuzz.grading.candidates import Candidate
    from fuzz.grading.local_executor import CHECK_BUDGET, CHECK_CALL_TIMEOUT, CHECK_MAX_ELEMENTS, LocalBatch
    from fuzz.grading.options import GradeOptions

    options = GradeOptions()
    assert options.call_timeout > CHECK_CALL_TIMEOUT
    by_key = {}
    for name in ("sleeper", "neighbour"):
        path = tmp_path / f"{name}.py"
        path.write_text("def lse(x):\n    return x\n")
        by_key[f"{path}:lse"] = Candidate(path.name, str(path), f"{path}:lse", "0" * 64)
    sleeper, neighbour = by_key
    pool = InstantPool(by_key, options)
    work = [Job(key, "m:f", {"options": options.to_wire()}) for key in by_key]
    records = list(LocalBatch(work, by_key, options, pool, alone={sleeper}, briefly={sleeper}).records())
    assert len(records) == 2
    short, *full = pool.handed
    assert short[0] == sleeper and short[1].call_timeout == CHECK_CALL_TIMEOUT
    assert (short[1].budget, short[1].max_elements) == (CHECK_BUDGET, CHECK_MAX_ELEMENTS)
    assert sorted(key for key, _ in full) == sorted([sleeper, neighbour])
    assert all(handed.call_timeout == options.call_timeout for _, handed in full)


class _StoppingPool(InstantPool):
    """As InstantPool; ``stops[(k, key)]``: the jobs a stop names (the fork server found stopped) when
    ``key`` runs in the pool's k-th run (its first: the batch; then each run alone or together)."""

    def __init__(self, by_key, options, guard, stops) -> None:
        super().__init__(by_key, options)
        self.guard, self.stops, self.runs, self.cuts, self.cut = guard, stops, [], [], None

    def run(self, jobs):
        jobs = list(jobs)
        k = len(self.runs)
        self.runs.append([(job.key, job.payload["options"]["budget"]) for job in jobs])
        for job in jobs:
            if (k, job.key) in self.stops:
                self.guard.add(stop_event(Stopped.FORK_SERVER, FORK_SERVER, self.stops[(k, job.key)]))
        # Which jobs of this run the real pool would cut short now (its drivers killed at once).
        self.cuts.append(None if self.cut is None else sorted(job.key for job in jobs if self.cut(job)))
        yield from super().run(jobs)


def _freed_batch(tmp_path, stops):
    from fuzz.grading.candidates import Candidate
    from fuzz.grading.local_executor import LocalBatch
    from fuzz.grading.options import GradeOptions

    options = GradeOptions()
    by_key = {}
    for name in ("stopper", "a", "b", "c"):
        path = tmp_path / f"{name}.py"
        path.write_text("def lse(x):\n    return x\n")
        by_key[name] = Candidate(path.name, str(path), name, "0" * 64)
    guard = SignalGuard()  # not entered: its list of events is what the stops fill
    pool = _StoppingPool(by_key, options, guard, stops)
    restored, withdrawn = [], []
    batch = LocalBatch([Job(key, "m:f", {"options": options.to_wire()}) for key in by_key], by_key, options, pool,
                       guard=guard, withdraw=withdrawn.append, restore=lambda record: restored.append(record.target))
    records = {}
    for record in batch.records():
        records[record.target] = record
    return pool.runs, records, sorted(restored), sorted(withdrawn), pool.cuts


def test_freed_neighbours_are_checked_briefly_all_at_once(tmp_path):
    # The stopper stops the fork server in the batch (a, b and c beside it) and again alone: convicted,
    # it explains the first stop. Its neighbours then run briefly together, once, not one at a time.
    from fuzz.grading.local_executor import CHECK_BUDGET

    everyone = ("stopper", "a", "b", "c")
    runs, records, restored, withdrawn, cuts = _freed_batch(tmp_path, {(0, "stopper"): everyone,
                                                                       (1, "stopper"): ("stopper",)})
    assert [[key for key, _ in run] for run in runs] == [list(everyone), ["stopper"], ["a", "b", "c"]]
    assert all(budget == CHECK_BUDGET for run in runs[1:] for _, budget in run)  # convicted by its short run
    assert records["stopper"].verdict.value == "crash"
    assert restored == ["a", "b", "c"] and withdrawn == ["a", "b", "c", "stopper"]
    # The batch runs whole; the stopper's short run alone is cut once its stop names it; no stop
    # names the neighbours run together, so their short runs end by themselves.
    assert cuts == [None, ["stopper"], []]


def test_a_stop_among_the_freed_neighbours_sends_those_it_names_alone(tmp_path):
    # In the short run together, b stops the fork server beside a (c is over by then): neither is
    # tied to it, so both run briefly alone; alone, b stops it again and is blamed, a keeps its record.
    everyone = ("stopper", "a", "b", "c")
    runs, records, restored, _, cuts = _freed_batch(tmp_path, {(0, "stopper"): everyone, (1, "stopper"): ("stopper",),
                                                               (2, "b"): ("a", "b"), (4, "b"): ("b",)})
    assert [[key for key, _ in run] for run in runs] == [list(everyone), ["stopper"], ["a", "b", "c"], ["a"], ["b"]]
    assert records["b"].verdict.value == "crash" and "stopped the fork server" in records["b"].reason
    assert restored == ["a", "c"]
    # Together, the stop naming a and b cuts both; alone, a runs to its end and b is cut.
    assert cuts == [None, ["stopper"], ["a", "b"], [], ["b"]]


def test_suspects_that_show_no_attack_briefly_are_graded_again_in_full_all_at_once(tmp_path):
    # A stop names all four, and none of them stops anything alone: each runs briefly alone, the one
    # named most and quickest first, then all four in full, together (each record that run's). One
    # at a time, their full runs took a minute of an H100's hostile batch.
    from fuzz.grading.local_executor import CHECK_BUDGET
    from fuzz.grading.options import GradeOptions

    everyone = ("stopper", "a", "b", "c")
    runs, records, restored, _, cuts = _freed_batch(tmp_path, {(0, "stopper"): everyone})
    full = GradeOptions().budget
    assert runs[1:] == [[(key, CHECK_BUDGET)] for key in everyone] + [[(key, full) for key in everyone]]
    assert all(record.verdict.value == "pass" for record in records.values()) and restored == []
    assert cuts == [None] + [[]] * 4 + [None]  # short runs alone (none names them), the full one never cut


def test_a_stop_in_the_full_run_together_sends_those_it_names_alone_in_full(tmp_path):
    # b waits past its short run alone to stop the fork server, in the full run beside a, c and the
    # stopper (which shows nothing alone): the stop names all four, so each is graded alone in full,
    # and alone b stops it again and is blamed.
    from fuzz.grading.local_executor import CHECK_BUDGET
    from fuzz.grading.options import GradeOptions

    everyone = ("stopper", "a", "b", "c")
    runs, records, _, _, _ = _freed_batch(tmp_path, {(0, "stopper"): everyone, (5, "b"): everyone, (8, "b"): ("b",)})
    full = GradeOptions().budget
    assert runs[1:5] == [[(key, CHECK_BUDGET)] for key in everyone]
    assert runs[5:] == [[(key, full) for key in everyone]] + [[(key, full)] for key in everyone]
    assert records["b"].verdict.value == "crash" and "stopped the fork server" in records["b"].reason
    assert all(records[key].verdict.value == "pass" for key in ("stopper", "a", "c"))


def _kept_in_doubt(tmp_path, outcomes):
    """A batch of b, with a's passing record kept from a run the grader died in while it was in doubt."""
    from fuzz.grading.candidates import Candidate
    from fuzz.grading.evaluate import base_record
    from fuzz.grading.local_executor import LocalBatch
    from fuzz.grading.options import GradeOptions
    from fuzz.outcomes import Verdict

    options = GradeOptions()
    by_key = {}
    for name in ("a", "b"):
        path = tmp_path / f"{name}.py"
        path.write_text("def lse(x):\n    return x\n")
        by_key[name] = Candidate(path.name, str(path), name, "0" * 64)
    kept = base_record(by_key["a"], options)
    kept.verdict, kept.reason = Verdict.PASS, "passed"
    pool = InstantPool(by_key, options, outcomes)
    restored = []
    jobs = {key: Job(key, "m:f", {"options": options.to_wire()}) for key in by_key}
    batch = LocalBatch([jobs["b"]], by_key, options, pool, guard=SignalGuard(), recheck=[jobs["a"]], kept={"a": kept},
                       restore=lambda record: restored.append(record.target))
    records = list(batch.records())
    return [(key, handed.budget) for key, handed in pool.handed], records, restored


def test_a_record_kept_in_doubt_is_checked_briefly_after_the_batch_not_graded_again(tmp_path):
    from fuzz.grading.local_executor import CHECK_BUDGET
    from fuzz.grading.options import GradeOptions

    handed, records, restored = _kept_in_doubt(tmp_path, {})
    assert handed == [("b", GradeOptions().budget), ("a", CHECK_BUDGET)]
    assert [record.target for record in records] == ["b"] and restored == ["a"]


def test_a_record_kept_in_doubt_whose_candidate_attacks_in_its_short_run_is_replaced(tmp_path):
    handed, records, restored = _kept_in_doubt(tmp_path, {"a": "attack"})
    assert [key for key, _ in handed] == ["b", "a"] and restored == []
    assert [(record.target, record.verdict.value) for record in records] == [("b", "pass"), ("a", "crash")]


def test_a_suspect_whose_short_run_showed_nothing_and_whose_stops_were_explained_keeps_its_record(tmp_path):
    # a is named by two stops, the stopper's (beside it) and b's (beside it): named most, it runs
    # briefly alone first and shows nothing. The stopper and b, alone, stop again: convicted, they
    # explain both stops, so a keeps its first record without a full run.
    from fuzz.grading.local_executor import CHECK_BUDGET

    runs, records, restored, _, _ = _freed_batch(tmp_path, {(0, "stopper"): ("a", "stopper"), (0, "b"): ("a", "b"),
                                                            (2, "stopper"): ("stopper",), (3, "b"): ("b",)})
    assert runs[1:] == [[("a", CHECK_BUDGET)], [("stopper", CHECK_BUDGET)], [("b", CHECK_BUDGET)]]
    assert records["stopper"].verdict.value == records["b"].verdict.value == "crash"
    assert records["a"].verdict.value == "pass" and restored == ["a"]
