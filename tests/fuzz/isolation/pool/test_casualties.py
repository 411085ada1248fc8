"""Which casualties of a driver's death run again at once and which wait to run alone (fuzz.isolation.pool.casualties)."""

from __future__ import annotations

import time

from fuzz.isolation import Job
from fuzz.isolation.guard.blame import LINGER
from fuzz.isolation.pool.casualties import DEATHS_HELD, LOADED_YOUNG, STARTED_YOUNG, Casualty, Triage


def casualty(key: str, ran: float, loaded: float | None = None) -> Casualty:
    """A casualty of a death now, which had run ``ran`` seconds (its candidate loaded ``loaded``
    seconds ago, or not yet)."""
    now = time.monotonic()
    return Casualty(Job(key, "m:f"), frozenset({"a", "b", "c"}), now - ran, None if loaded is None else now - loaded)


def died(triage: Triage, **ran: float | tuple[float, float]) -> None:
    """A death of the jobs named: each ran that many seconds, not loaded yet, or (ran, loaded ago)."""
    for key, seconds in ran.items():
        triage.found(casualty(key, *seconds) if isinstance(seconds, tuple) else casualty(key, seconds))
    triage.settle(busy=False)


def handed_back(triage: Triage) -> list[str]:
    keys = []
    while (job := triage.again()) is not None:
        keys.append(job.key)
    return keys


def held(triage: Triage) -> list[str]:
    return [casualty.job.key for casualty in triage.held]


def test_one_that_loaded_just_before_the_death_is_held_the_others_run_again_at_once():
    # The killer loads, calls, kills; a newcomer started after it (an import that hangs, say) had
    # not loaded: it runs again at once, not at the end of the batch (a 60 s import there). A long
    # neighbour loaded long ago.
    triage = Triage()
    died(triage, long=(40.0, 39.0), killer=(1.5, 0.1), loading=0.5)
    assert held(triage) == ["killer"] and handed_back(triage) == ["long", "loading"]


def test_every_one_that_loaded_just_before_the_death_is_held_the_last_to_load_first():
    # Two killers in one death (one of the fork server, one of its siblings' drivers): both held,
    # so neither kills again beside the long kernels run again at once.
    triage = Triage()
    died(triage, hang=40.0, kernel=(10.0, 9.5), killer=(0.4, 0.3), siblings_killer=(0.3, 0.1))
    assert held(triage) == ["siblings_killer", "killer"] and handed_back(triage) == ["hang", "kernel"]
    assert not triage.waiting


def test_where_none_had_loaded_just_before_those_importing_since_just_before_are_held():
    # A kill during an import: the one that started just before is held; one loaded long ago is not.
    triage = Triage()
    died(triage, old=(30.0, 29.0), importer=0.5, slower=STARTED_YOUNG - 1, oldest_importer=STARTED_YOUNG + 5)
    assert held(triage) == ["importer", "slower"] and handed_back(triage) == ["old", "oldest_importer"]


def test_where_none_is_young_the_likeliest_alone_is_held():
    triage = Triage()
    died(triage, a=(30.0, 20.0), b=(LOADED_YOUNG + 3, LOADED_YOUNG + 1), c=STARTED_YOUNG + 10)
    assert held(triage) == ["b"] and handed_back(triage) == ["a", "c"]


def test_a_death_is_triaged_only_once_its_drivers_can_all_be_found():
    triage = Triage()
    triage.found(casualty("a", 30.0))
    triage.settle(busy=True)  # another driver of the same death may be found in a moment
    assert triage.waiting and held(triage) == [] and triage.again() is None
    triage.found(casualty("b", 0.5))
    time.sleep(LINGER + 0.1)
    triage.settle(busy=True)
    assert held(triage) == ["b"] and handed_back(triage) == ["a"]


def test_a_run_again_is_no_newcomer_its_first_death_decides():
    # Run again at once after a death it was old at, a long kernel that dies again a moment after
    # its new start (beside a new killer) is not young: its times are those of its first death.
    triage = Triage()
    died(triage, kernel=(20.0, 19.0), killer=(0.5, 0.2))
    assert handed_back(triage) == ["kernel"]
    died(triage, kernel=(0.6, 0.4), killer2=(0.3, 0.1))
    assert held(triage) == ["killer", "killer2"] and handed_back(triage) == ["kernel"]


def test_a_killer_that_waits_is_held_once_found_dead_often():
    # It kills 20 s after it starts: the newcomers beside it are held, it runs again at once, and
    # kills again; found dead DEATHS_HELD times, it is held with the newest newcomer.
    triage = Triage()
    for death in range(1, DEATHS_HELD + 1):
        died(triage, slow_killer=(20.0, 19.5), **{f"newcomer{death}": (0.2, 0.1)})
        assert handed_back(triage) == ([] if death == DEATHS_HELD else ["slow_killer"])
    assert held(triage) == [f"newcomer{d}" for d in range(1, DEATHS_HELD)] + ["slow_killer", f"newcomer{DEATHS_HELD}"]
    assert triage.held[-2].deaths == DEATHS_HELD


def test_one_held_and_run_again_is_held_again_only_if_young_again():
    # Held at a first death (all three loaded just before), then run again together at the end:
    # the killer loads and kills at once again; the other two had not loaded when it did. Only
    # the killer is held again; the others run again at once.
    triage = Triage()
    died(triage, killer=(0.5, 0.1), noisy=(0.6, 0.3), kernel=(0.7, 0.4), a=(30.0, 29.0), b=(30.0, 29.0), c=(30.0, 29.0))
    assert sorted(held(triage)) == ["kernel", "killer", "noisy"]
    handed_back(triage)
    triage.held.clear()
    died(triage, killer=(0.9, 0.06), noisy=0.9, kernel=0.9)
    assert held(triage) == ["killer"] and handed_back(triage) == ["noisy", "kernel"]


def test_where_most_casualties_are_young_only_the_likeliest_is_held():
    # All started together (the batch's start): every one loaded just before the death, so youth
    # tells nothing; the last to load is held, the hang beside it runs again at once.
    triage = Triage()
    died(triage, hang=(0.5, 0.3), killer=(0.5, 0.05), siblings_killer=(0.5, 0.2), kernel=(0.5, 0.4))
    assert held(triage) == ["killer"] and handed_back(triage) == ["hang", "siblings_killer", "kernel"]
