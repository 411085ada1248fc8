"""The in-flight journal (fuzz.grading.journal): which candidates ``--resume`` runs alone first,
in which order, and which it convicts, from what was in flight each time the grader died."""

from __future__ import annotations

from pathlib import Path

from fuzz.grading.candidates import Candidate
from fuzz.grading.journal import Journal


def candidates(tmp_path: Path, *names: str) -> dict[str, Candidate]:
    found = {}
    for name in names:
        path = tmp_path / f"{name}.py"
        path.write_text(f"# {name}\n")
        found[name] = Candidate(name=path.name, path=str(path), target=f"{path}:lse")
    return found


def died(journal: Journal, *started: tuple[Candidate, bool]) -> None:
    """A run that wrote down ``started`` (candidate, alone) and died without a word."""
    journal.begin()
    for candidate, alone in started:
        journal.started(candidate, alone=alone)


def names(found: list[Candidate]) -> list[str]:
    return [Path(c.path).stem for c in found]


def test_the_candidate_that_started_last_runs_alone_first(tmp_path):
    # A killer kills with its first calls: of those in flight at the death, the newest is likeliest.
    c = candidates(tmp_path, "a", "b", "killer")
    journal = Journal(tmp_path / "out", "key")
    (tmp_path / "out").mkdir()
    died(journal, (c["a"], False), (c["b"], False), (c["killer"], False))
    convicted, suspects = journal.suspects(list(c.values()))
    assert convicted == [] and names(suspects) == ["killer", "b", "a"]


def test_once_the_killer_is_convicted_its_neighbours_at_that_death_need_no_run_alone(tmp_path):
    # Run again alone, the killer killed the grader again: convicted. The death it was in flight
    # for beside a and b is its doing, so a and b are graded as any other, side by side.
    c = candidates(tmp_path, "a", "b", "killer", "later")
    journal = Journal(tmp_path / "out", "key")
    (tmp_path / "out").mkdir()
    died(journal, (c["a"], False), (c["b"], False), (c["killer"], False))
    died(journal, (c["killer"], True))
    convicted, suspects = journal.suspects(list(c.values()))
    assert names(convicted) == ["killer"] and suspects == []


def test_a_death_the_convicted_one_was_not_in_flight_for_still_names_its_own_suspects(tmp_path):
    c = candidates(tmp_path, "a", "killer", "b", "other")
    journal = Journal(tmp_path / "out", "key")
    (tmp_path / "out").mkdir()
    died(journal, (c["a"], False), (c["killer"], False))
    died(journal, (c["killer"], True))
    died(journal, (c["b"], False), (c["other"], False))  # another killer's doing, later on
    convicted, suspects = journal.suspects(list(c.values()))
    assert names(convicted) == ["killer"] and names(suspects) == ["other", "b"]


def test_a_record_left_in_doubt_by_a_dead_run_is_graded_alone_first_unless_it_was_cleared(tmp_path):
    # a stopped the fork server beside b: both records written, both suspects; the grader died
    # before either was graded again alone. b was cleared meanwhile (graded alone), a was not.
    c = candidates(tmp_path, "a", "b", "killer")
    journal = Journal(tmp_path / "out", "key")
    (tmp_path / "out").mkdir()
    died(journal, (c["a"], False), (c["b"], False))
    journal.doubted(c["a"])
    journal.doubted(c["b"])
    journal.doubted(c["b"], doubt=False)
    journal.started(c["killer"], alone=False)
    assert journal.in_doubt() == {(c["a"].target, c["a"].sha256)}
    convicted, suspects = journal.suspects(list(c.values()))
    assert convicted == [] and names(suspects)[0] == "killer" and "a" in names(suspects)


def test_a_suspect_whose_short_run_alone_ended_is_not_convicted_by_a_later_death(tmp_path):
    # On --resume the suspects of a death run briefly alone, the newest first: b's ended and the
    # grader lived (cleared); then the killer's killed it again. b is no killer; the killer is.
    c = candidates(tmp_path, "a", "b", "killer")
    journal = Journal(tmp_path / "out", "key")
    (tmp_path / "out").mkdir()
    died(journal, (c["a"], False), (c["killer"], False), (c["b"], False))
    journal.begin()
    journal.started(c["b"], alone=True, short=True)
    journal.cleared(c["b"])
    journal.started(c["killer"], alone=True, short=True)
    convicted, suspects = journal.suspects(list(c.values()))
    assert names(convicted) == ["killer"] and suspects == []  # a and b go on beside the others
    assert journal.checked() == {c["b"].target, c["killer"].target}
