"""Pieces of the local executor (fuzz.grading.local_executor) that end-to-end runs show only by their timing:
which suspect is graded again alone first, and when the others need not be."""

from __future__ import annotations

from fuzz.grading.local_executor import next_suspect
from fuzz.isolation import Job
from fuzz.isolation.guard.blame import stop_event
from fuzz.isolation.guard.signals import SignalGuard, Stopped

FORK_SERVER = 11


def test_the_suspect_named_most_and_quickest_runs_alone_first_and_its_conviction_frees_the_rest():
    # The batch at -j 2: a hanging import is in flight for every stop of the fork server,
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
