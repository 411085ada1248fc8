"""Which casualties of a driver's death run again at once and which wait to run alone (fuzz.isolation.pool.casualties)."""

from __future__ import annotations

import time

from fuzz.isolation import Job
from fuzz.isolation.guard.blame import LINGER
from fuzz.isolation.pool.casualties import Casualty, Triage


def casualty(key: str, ran: float, loaded: float | None = None) -> Casualty:
    """A casualty of a death now, which had run ``ran`` seconds (its candidate loaded ``loaded``
    seconds ago, or not yet)."""
    now = time.monotonic()
    return Casualty(Job(key, "m:f"), frozenset({"a", "b", "c"}), now - ran, None if loaded is None else now - loaded)


def died(triage: Triage, **ran: float) -> None:
    for key, seconds in ran.items():
        triage.found(casualty(key, seconds))
    triage.settle(busy=False)


def handed_back(triage: Triage) -> list[str]:
    keys = []
    while (job := triage.again()) is not None:
        keys.append(job.key)
    return keys


def held(triage: Triage) -> list[str]:
    return [casualty.job.key for casualty in triage.held]


def test_the_one_started_last_is_held_and_the_others_run_again_at_once():
    triage = Triage()
    died(triage, a=30.0, b=0.1, c=0.5)
    assert held(triage) == ["b"]  # died soonest after it started: an attack comes with the first calls
    assert handed_back(triage) == ["a", "c"] and not triage.waiting


def test_one_whose_candidate_had_loaded_last_is_held_before_one_still_loading():
    # The killer loads, calls, kills; a newcomer started after it (an import that hangs, say) had
    # not loaded: started last, it ran none of its candidate's calls yet. A long neighbour loaded
    # long ago.
    triage = Triage()
    for found in (casualty("long", 40.0, loaded=39.0), casualty("killer", 1.5, loaded=0.1),
                  casualty("loading", 0.5)):
        triage.found(found)
    triage.settle(busy=False)
    assert held(triage) == ["killer"] and handed_back(triage) == ["long", "loading"]


def test_a_death_is_triaged_only_once_its_drivers_can_all_be_found():
    triage = Triage()
    triage.found(casualty("a", 30.0))
    triage.settle(busy=True)  # another driver of the same death may be found in a moment
    assert triage.waiting and held(triage) == [] and triage.again() is None
    triage.found(casualty("b", 0.5))
    time.sleep(LINGER + 0.1)
    triage.settle(busy=True)
    assert held(triage) == ["b"] and handed_back(triage) == ["a"]


def test_a_killer_that_waits_is_held_once_found_dead_more_often_than_the_rest():
    # It kills 20 s after it starts: a newcomer is held at the first death, the killer runs again
    # at once and kills again; found dead twice, it is held then, not the newer newcomer.
    triage = Triage()
    died(triage, slow_killer=20.0, newcomer=0.2)
    assert handed_back(triage) == ["slow_killer"]
    died(triage, slow_killer=20.0, newer=0.1)
    assert held(triage) == ["newcomer", "slow_killer"] and handed_back(triage) == ["newer"]
    assert [casualty.deaths for casualty in triage.held] == [1, 2]


def test_two_killers_in_one_death_cost_one_more_death_not_the_neighbours_turns_alone():
    # Both in flight at once: the one started last is held, the other kills again beside the
    # neighbours run again. It is held then (found dead twice, and started last of those before
    # the first death, whatever the order they started again in); the neighbours, dead twice too,
    # run again beside the rest, not each alone at the end.
    triage = Triage()
    died(triage, hang=40.0, kernel=10.0, killer=0.2, siblings_killer=0.1)
    assert held(triage) == ["siblings_killer"]
    assert handed_back(triage) == ["hang", "kernel", "killer"]
    died(triage, killer=1.2, hang=1.1, kernel=0.1)
    assert held(triage) == ["siblings_killer", "killer"] and handed_back(triage) == ["hang", "kernel"]
