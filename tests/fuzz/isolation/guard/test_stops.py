"""Who stopped a process of the grading. SIGSTOP names no sender, so a stop found names every job
in flight at any moment it may have happened in (fuzz.isolation.guard.blame: Timeline, stop_event),
and a job is blamed only when it was the only one (fuzz.isolation.guard.signals.SignalGuard.claim):
an innocent job that started after the stop, or ran beside the stopper, is never blamed. The
resumer (fuzz.isolation.guard.stops) continues a stopped process and tells when the stop happened: between the last time the process was seen
running and the moment it was found stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from fuzz.isolation.guard.blame import StopBlame, Timeline, stop_event
from fuzz.isolation.guard.signals import Sender, SignalEvent, SignalGuard, Stopped, describe_stops
from fuzz.isolation.guard.stops import (QUICK_SLICE, WAIT_SLICE, _Resumer, report_stops, resume_if_stopped,
                                        stop_reporting, sweep, unwatch, watch)

FORK_SERVER, DRIVER, STOPPER_WORKER, INNOCENT_WORKER = 11, 12, 20, 21


def guard_with(*events: SignalEvent) -> SignalGuard:
    guard = SignalGuard()  # not entered: only its list of events is used
    assert guard.active, "claims are judged in the main thread"
    for event in events:
        guard.add(event)
    return guard


def claims(guard: SignalGuard) -> dict[str, list[SignalEvent]]:
    return {"innocent": guard.claim("innocent", (INNOCENT_WORKER,)), "stopper": guard.claim("stopper", (STOPPER_WORKER,))}


def test_a_job_that_started_after_the_stop_was_found_is_not_named():
    timeline = Timeline(linger=1.0)
    timeline.started("stopper", 0.0)
    timeline.started("innocent", 5.0)  # the fork server was seen running at 4.0, found stopped at 4.5
    event = stop_event(Stopped.FORK_SERVER, FORK_SERVER, timeline.between(4.0, 4.5))
    assert event.in_flight == ("stopper",)
    assert claims(guard_with(event)) == {"innocent": [], "stopper": [event]}


def test_a_job_that_started_before_the_stop_was_found_is_named_but_blamed_for_nothing():
    # Found at 5.5: it may have happened after the innocent job started, so both are named and
    # neither is blamed: each is a suspect, to be run again alone.
    timeline = Timeline(linger=1.0)
    timeline.started("stopper", 0.0)
    timeline.started("innocent", 5.0)
    event = stop_event(Stopped.DRIVER, DRIVER, timeline.between(4.0, 5.5))
    guard = guard_with(event)
    assert claims(guard) == {"innocent": [], "stopper": []}
    assert guard.suspects() == ["stopper", "innocent"]


def test_a_job_beside_the_stopper_is_never_blamed_and_the_stopper_alone_is():
    timeline = Timeline(linger=1.0)
    timeline.started("innocent", 0.0)
    timeline.started("stopper", 0.5)
    beside = stop_event(Stopped.FORK_SERVER, FORK_SERVER, timeline.between(2.0, 2.5))
    timeline.ended("innocent", 6.0)
    lingering = stop_event(Stopped.DRIVER, DRIVER, timeline.between(6.5, 6.9))  # its orphan may live on
    alone = stop_event(Stopped.DRIVER, DRIVER, timeline.between(7.5, 8.0))
    assert beside.in_flight == lingering.in_flight == ("innocent", "stopper") and alone.in_flight == ("stopper",)
    guard = guard_with(beside, lingering, alone)
    assert claims(guard) == {"innocent": [], "stopper": [alone]}
    assert guard.suspects() == ["innocent", "stopper"]
    # Run again alone, the stopper stops the grading again: what named it among others is explained.
    assert guard.explained_by("stopper") == [beside, lingering]
    assert guard.suspects() == []


def test_a_stopper_is_named_by_more_stops_than_a_neighbour_and_explains_stops_not_signals():
    # Beside a hang (in flight throughout), the stopper stops the fork server and the hang's worker:
    # the worker's stop names only the stopper (its owner may stop what is its own).
    beside = stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("hang", "stopper"))
    worker = stop_event(Stopped.WORKER, INNOCENT_WORKER, ("hang", "stopper"), owner="hang")
    orphan = SignalEvent(signal.SIGTERM, 99, Sender.RUN, (99,), ("hang", "stopper"))
    guard = guard_with(beside, worker, orphan)
    assert guard.suspicion() == {"stopper": 3, "hang": 2}
    # Convicted of stopping the fork server (run again alone, it did so again), it explains every
    # stop that named it, the worker's too (alone it had no neighbour's worker to stop: a stop is one
    # deed whatever it stopped); a signal from an orphan is another act, still no one's.
    alone = stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("stopper",))
    assert guard.explained_by("stopper", like=[alone]) == [beside, worker]
    assert guard.suspicion() == {"stopper": 1, "hang": 1}


def test_only_an_event_kept_since_a_mark_that_names_a_job_cuts_its_short_run():
    # fuzz.grading.local_executor cuts a short run once an event names it: not for one from before.
    before = stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("hang", "stopper"))
    guard = guard_with(before)
    mark = guard.kept()
    assert not guard.names("stopper", besides=mark) and guard.names("stopper")
    guard.add(stop_event(Stopped.WORKER, INNOCENT_WORKER, ("hang", "stopper"), owner="hang"))
    assert guard.names("stopper", besides=mark)
    assert not guard.names("hang", besides=mark)  # its own worker stopped names it not
    assert guard.kept() == frozenset(guard.events)


def test_a_window_counts_every_job_in_flight_at_any_moment_of_it():
    timeline = Timeline(linger=1.0)
    timeline.started("a", 0.0)
    timeline.ended("a", 3.0)
    timeline.started("b", 3.0)
    timeline.started("c", 10.0)
    assert timeline.between(2.5, 3.5) == ("a", "b")  # a ended, b started during it
    assert timeline.between(3.9, 4.0) == ("a", "b")  # a still lingers
    assert timeline.between(4.5, 9.0) == ("b",)
    assert timeline.between(9.0, 10.0) == ("b", "c")
    assert timeline.quiet_from() == float("inf")  # b and c still run
    timeline.ended("b", 11.0)
    timeline.ended("c", 12.0)
    assert timeline.quiet_from() == 13.0
    timeline.started("a", 20.0)  # run again (alone): in flight again
    assert timeline.between(19.0, 21.0) == ("a",)


def test_a_job_that_stops_its_own_worker_attacks_nothing():
    assert stop_event(Stopped.WORKER, INNOCENT_WORKER, ("innocent",), owner="innocent") is None
    # Beside another job, the other one may have done it (an attack) or the owner (none): the
    # other one is the suspect, and nobody is blamed yet.
    event = stop_event(Stopped.WORKER, INNOCENT_WORKER, ("innocent", "stopper"), owner="innocent")
    assert event.suspects == ("stopper",)
    guard = guard_with(event)
    assert claims(guard) == {"innocent": [], "stopper": []}
    assert guard.suspects() == ["stopper"]
    # A stop of another job's worker while the stopper ran alone is the stopper's.
    alone = stop_event(Stopped.WORKER, INNOCENT_WORKER, ("stopper",), owner="innocent")
    assert claims(guard_with(alone)) == {"innocent": [], "stopper": [alone]}


def test_a_stop_found_again_and_again_is_kept_once():
    # Twice a second for as long as the stopper runs: it must not crowd out other events.
    event = stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("innocent", "stopper"))
    guard = guard_with(*[stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("innocent", "stopper")) for _ in range(5)])
    assert guard.events == [event]


def test_a_signal_tied_to_no_job_names_its_suspects_too():
    orphan = SignalEvent(signal.SIGTERM, 99, Sender.RUN, (99,), ("innocent", "stopper"))
    guard = guard_with(orphan)
    assert claims(guard) == {"innocent": [], "stopper": []}
    assert guard.suspects() == ["innocent", "stopper"]


def test_the_description_names_each_process_stopped_once():
    events = [stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("a", "b")), stop_event(Stopped.FORK_SERVER, FORK_SERVER, ("a",)),
              stop_event(Stopped.DRIVER, DRIVER, ("a",)), stop_event(Stopped.DRIVER, DRIVER + 1, ("a",))]
    assert describe_stops(events) == "stopped the fork server and 2 grading drivers (SIGSTOP), which were continued"
    one = [stop_event(Stopped.WORKER, INNOCENT_WORKER, ("a",), owner="b")]
    assert describe_stops(one) == "stopped a neighbour's worker (SIGSTOP), which was continued"


@pytest.fixture
def sleeper():
    process = subprocess.Popen(["sleep", "30"])
    yield process
    process.kill()
    process.wait()


def test_the_resumer_tells_when_a_watched_process_was_stopped(sleeper):
    found: list[tuple[int, float, float]] = []

    def listener(pid: int, since: float, at: float) -> None:
        if pid == sleeper.pid:
            found.append((pid, since, at))

    report_stops(listener)
    watch(sleeper.pid, time.monotonic())
    try:
        checking = time.monotonic()
        sweep()  # seen running: a later stop happened after this
        time.sleep(0.1)
        before_stop = time.monotonic()
        os.kill(sleeper.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while not found and time.monotonic() < deadline:
            sweep()  # the resumer's thread may find it first: told once either way
            time.sleep(0.05)
        after = time.monotonic()
        assert len(found) == 1
        _, since, at = found[0]
        # It stops when the kernel next schedules it, a moment after the kill: the window holds that
        # moment (a job counts as in flight for blame.LINGER after it ended, which covers the delay).
        assert before_stop <= at <= after and since < at
        assert since >= checking  # the window opens at the last check that saw it running, not at the watch
        with open(f"/proc/{sleeper.pid}/stat") as f:
            assert f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t")  # continued
        sweep()
        assert len(found) == 1  # one stop, told once
    finally:
        stop_reporting(listener)
        unwatch(sleeper.pid)


def test_after_a_stop_the_resumer_checks_a_hundred_times_a_second_for_a_while(sleeper):
    # A stopper that stops the run's processes on every call would hold each of them stopped for
    # half of every check's interval: after a stop, the checks come quickly.
    resumer = _Resumer()
    assert resumer.pause() == WAIT_SLICE
    resumer.watch(sleeper.pid, time.monotonic())
    os.kill(sleeper.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while resumer.pause() == WAIT_SLICE and time.monotonic() < deadline:
        resumer.sweep()
        time.sleep(0.05)
    assert resumer.pause() == QUICK_SLICE < WAIT_SLICE / 10
    resumer.unwatch(sleeper.pid)


def test_a_stopped_process_is_continued_by_whoever_waits_on_it():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert not resume_if_stopped(sleeper.pid)  # running: left alone
        os.kill(sleeper.pid, signal.SIGSTOP)
        time.sleep(0.2)
        assert resume_if_stopped(sleeper.pid)
        time.sleep(0.2)
        with open(f"/proc/{sleeper.pid}/stat") as f:
            assert f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t")
        # A watched process is continued without anyone asking: a reader blocked halfway through
        # a message from a stopped process runs no check of its own.
        watch(sleeper.pid)
        os.kill(sleeper.pid, signal.SIGSTOP)
        time.sleep(1.5)
        with open(f"/proc/{sleeper.pid}/stat") as f:
            assert f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t")
    finally:
        unwatch(sleeper.pid)
        sleeper.kill()
        sleeper.wait()


def _stop_and_find(pid: int, events: list) -> None:
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        sweep()
        time.sleep(0.05)


@pytest.mark.parametrize("kind, owner, in_flight, named", [
    (Stopped.DRIVER, None, ("a",), ("a",)),
    (Stopped.WORKER, "b", ("a", "b"), ("a", "b")),  # beside another job: an event, suspects "a" only
    (Stopped.WORKER, "a", ("a",), None),  # its own job alone stopped it: no attack
    (None, None, ("a",), None),  # not one of the pool's processes
], ids=["driver", "worker-beside-another-job", "own-worker-alone", "untracked"])
def test_the_pools_blame_names_the_jobs_in_flight_when_its_process_was_stopped(sleeper, kind, owner, in_flight, named):
    blame, events = StopBlame(), []
    blame.report = events.append
    try:
        if kind is Stopped.WORKER:
            blame.worker_started(sleeper.pid, owner, time.monotonic())
        else:
            watch(sleeper.pid, time.monotonic())
            if kind is not None:
                blame.track(sleeper.pid, kind)
        for key in in_flight:
            blame.handed(key)
        _stop_and_find(sleeper.pid, events)
        if named is None:
            time.sleep(0.3)
            assert events == []
        else:
            [event] = events
            assert (event.stopped, event.stopped_pid, event.in_flight, event.owner) == (kind, sleeper.pid, named, owner)
            assert event.suspects == tuple(key for key in named if key != owner)
        for key in in_flight:
            blame.over(key, (sleeper.pid,) if kind is Stopped.WORKER else ())
        assert blame.quiet_from() <= time.monotonic() + blame._timeline.linger
    finally:
        blame.close()
        unwatch(sleeper.pid)


def test_a_full_list_of_events_makes_room_for_a_later_attack_alone(monkeypatch):
    # A batch's orphan signals, beside three neighbours, fill the list; the attacker then runs again
    # alone and signals once more: that event must be kept, or it passes (seen with 200 examples:
    # each call's orphan signal is an event of its own).
    from fuzz.isolation.guard import signals

    monkeypatch.setattr(signals, "MAX_EVENTS", 10)
    beside = [SignalEvent(signal.SIGTERM, 1000 + i, Sender.RUN, (1000 + i, FORK_SERVER), ("orphan", "a", "b", "c"))
              for i in range(10)]
    stop = stop_event(Stopped.DRIVER, DRIVER, ("orphan", "a"))  # one of a kind: kept while others go
    guard = guard_with(stop, *beside)
    assert len(guard.events) == 10 and stop in guard.events
    alone = SignalEvent(signal.SIGTERM, 2000, Sender.RUN, (2000, FORK_SERVER), ("orphan",))
    guard.add(alone)
    assert len(guard.events) == 10 and alone in guard.events and stop in guard.events
    assert beside[0] not in guard.events  # the oldest alike went first
    assert guard.claim("orphan", ()) == [alone]
    assert guard.suspicion()["orphan"] == 9  # the stop and eight signals still name it beside the others
