"""Which casualties of a driver's death run again at once and which wait to run alone (fuzz.isolation.pool.casualties)."""

from __future__ import annotations

import time

from fuzz.isolation import Job
from fuzz.isolation.guard.blame import LINGER
from fuzz.isolation.pool.casualties import Casualty, Triage


def casualty(key: str, ran: float, *, worker: bool = True) -> Casualty:
    """A casualty of a death now, which had run ``ran`` seconds."""
    return Casualty(Job(key, "m:f"), frozenset({"a", "b", "c"}), time.monotonic() - ran, worker)


def handed_back(triage: Triage) -> list[str]:
    keys = []
    while (job := triage.again()) is not None:
        keys.append(job.key)
    return keys


def test_the_likeliest_culprit_is_held_and_the_others_run_again_at_once():
    triage = Triage()
    for found in (casualty("a", 30.0), casualty("b", 0.5), casualty("c", 0.1, worker=False)):
        triage.found(found)
    triage.settle(busy=False)
    # b had started a worker (where a candidate's code runs) and died soonest after it started.
    assert [held.job.key for held in triage.held] == ["b"]
    assert handed_back(triage) == ["a", "c"] and not triage.waiting


def test_a_death_is_triaged_only_once_its_drivers_can_all_be_found():
    triage = Triage()
    triage.found(casualty("a", 30.0))
    triage.settle(busy=True)  # another driver of the same death may be found in a moment
    assert triage.waiting and triage.held == [] and triage.again() is None
    triage.found(casualty("b", 0.5))
    time.sleep(LINGER + 0.1)
    triage.settle(busy=True)
    assert [held.job.key for held in triage.held] == ["b"] and handed_back(triage) == ["a"]


def test_a_job_found_dead_twice_is_held_whatever_its_time():
    # A killer that waits before it kills (ran longest) was handed back after the first death; it
    # kills again, and is held then, not the newcomer that died soonest beside it.
    triage = Triage()
    triage.found(casualty("slow_killer", 20.0))
    triage.found(casualty("quick", 0.2))
    triage.settle(busy=False)
    assert handed_back(triage) == ["slow_killer"]
    triage.found(casualty("slow_killer", 20.0))
    triage.found(casualty("newcomer", 0.1))
    triage.settle(busy=False)
    assert [held.job.key for held in triage.held] == ["quick", "slow_killer"]
    assert handed_back(triage) == ["newcomer"]
