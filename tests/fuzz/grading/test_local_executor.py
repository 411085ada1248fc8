"""Pieces of the local executor (fuzz.grading.local_executor) that end-to-end runs show only by their timing:
which suspect is graded again alone first, and when the others need not be."""

from __future__ import annotations

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


class _Pool:
    """Runs each job at once, a pass, and keeps the options each was handed."""

    def __init__(self, by_key, options) -> None:
        self.by_key, self.options, self.handed = by_key, options, []

    def wait_until_quiet(self) -> None:
        pass

    def in_flight(self, since=None) -> tuple[str, ...]:
        return ()

    def run(self, jobs):
        from fuzz.grading.evaluate import base_record
        from fuzz.grading.options import GradeOptions
        from fuzz.isolation import JobResult
        from fuzz.outcomes import Outcome, Verdict

        for job in jobs:
            self.handed.append((job.key, GradeOptions.from_wire(job.payload["options"])))
            record = base_record(self.by_key[job.key], self.options)
            record.verdict, record.reason = Verdict.PASS, "passed"
            yield JobResult(job, Outcome.RETURNED, record.to_json(), 1.0)


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
    pool = _Pool(by_key, options)
    work = [Job(key, "m:f", {"options": options.to_wire()}) for key in by_key]
    records = list(LocalBatch(work, by_key, options, pool, alone={sleeper}, briefly={sleeper}).records())
    assert len(records) == 2
    short, *full = pool.handed
    assert short[0] == sleeper and short[1].call_timeout == CHECK_CALL_TIMEOUT
    assert (short[1].budget, short[1].max_elements) == (CHECK_BUDGET, CHECK_MAX_ELEMENTS)
    assert sorted(key for key, _ in full) == sorted([sleeper, neighbour])
    assert all(handed.call_timeout == options.call_timeout for _, handed in full)
