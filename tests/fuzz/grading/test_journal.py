"""The in-flight journal (fuzz.grading.journal): which candidates ``--resume`` runs alone first,
in which order, and which it convicts, from what was in flight each time the grader died."""

from __future__ import annotations

from pathlib import Path

from grading_pools import GraderKilled, InstantPool

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


def test_a_record_left_in_doubt_by_a_dead_run_stays_in_doubt_unless_it_was_cleared(tmp_path):
    # a stopped the fork server beside b: both records written, both suspects; the grader died
    # before either was graded again alone. b was cleared meanwhile (graded alone), a was not: its
    # record is kept and a is checked after the batch (batch._resumed). Over before the death, a
    # is no suspect of it; the killer, in flight then, is.
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
    assert convicted == [] and names(suspects) == ["killer"]


def test_a_record_in_doubt_that_starts_again_is_a_suspect_of_a_later_death(tmp_path):
    # Run again on --resume (its record in doubt, checked after the batch), a is in flight when
    # the grader dies again: a suspect of that death, as any candidate in flight then.
    c = candidates(tmp_path, "a", "killer")
    journal = Journal(tmp_path / "out", "key")
    (tmp_path / "out").mkdir()
    died(journal, (c["a"], False))
    journal.doubted(c["a"])
    died(journal, (c["a"], False), (c["killer"], False))
    convicted, suspects = journal.suspects(list(c.values()))
    assert convicted == [] and names(suspects) == ["killer", "a"]


def test_a_suspect_whose_short_run_alone_ended_is_not_convicted_by_a_later_death(tmp_path):
    # On --resume the suspects of a death run briefly alone, the newest first: b's ended and the
    # grader lived (ended); then the killer's killed it again. b is no killer; the killer is.
    c = candidates(tmp_path, "a", "b", "killer")
    journal = Journal(tmp_path / "out", "key")
    (tmp_path / "out").mkdir()
    died(journal, (c["a"], False), (c["killer"], False), (c["b"], False))
    journal.begin()
    journal.started(c["b"], alone=True, short=True)
    journal.ended(c["b"])
    journal.started(c["killer"], alone=True, short=True)
    convicted, suspects = journal.suspects(list(c.values()))
    assert names(convicted) == ["killer"] and suspects == []  # a and b go on beside the others
    assert journal.checked() == {c["b"].target, c["killer"].target}


# -- what the local executor writes (fuzz.grading.local_executor) ---------------------------------


def resumed(out: Path, c: dict[str, Candidate], outcomes: dict[str, str], *, alone: list[str],
            briefly: list[str]) -> list[str]:
    """A --resume run of the local executor over ``c`` (``alone``: the suspects of a death, the
    order they run in; ``briefly``: those run only briefly alone) until the grader dies; the names
    of the records it yielded."""
    from fuzz.grading.local_executor import LocalBatch
    from fuzz.grading.options import GradeOptions
    from fuzz.isolation import Job

    options = GradeOptions()
    by_key = {candidate.target: candidate for candidate in c.values()}
    order = alone + [name for name in c if name not in alone]
    work = [Job(c[name].target, "m:f") for name in order]
    journal = Journal(out, "key")
    journal.begin()
    pool = InstantPool(by_key, options, {c[name].target: outcome for name, outcome in outcomes.items()})
    batch = LocalBatch(work, by_key, options, pool, journal=journal, alone={c[name].target for name in alone},
                       briefly={c[name].target for name in briefly})
    yielded = []
    try:
        for record in batch.records():
            yielded.append(Path(record.target.rpartition(":")[0]).stem)
    except GraderKilled:
        return yielded
    raise AssertionError("the grader was not killed")


def test_a_suspect_whose_short_run_alone_showed_an_attack_is_not_convicted_by_a_later_death(tmp_path):
    # The hostile batch at -j 8 (issue: stoppers convicted of the grader's death): the stopper was
    # in flight beside the killer when the killer ended the run. On --resume the stopper, started
    # last, ran briefly alone first and attacked (crash: that record stands); then the killer's short
    # run killed the grader again. The stopper's run ended with the grader alive: on the next
    # --resume only the killer was in flight alone when it died. (The stopper is pending there: its
    # record is a short run's, whose options are not the batch's, so --resume grades it again.)
    c = candidates(tmp_path, "killer", "stopper", "neighbour")
    out = tmp_path / "out"
    out.mkdir()
    journal = Journal(out, "key")
    died(journal, (c["killer"], False), (c["stopper"], False))
    yielded = resumed(out, c, {"stopper": "attack", "killer": "kills", "neighbour": "pass"},
                      alone=["stopper", "killer"], briefly=["stopper", "killer"])
    assert yielded == ["stopper"]
    convicted, suspects = Journal(out, "key").suspects(list(c.values()))
    assert names(convicted) == ["killer"]
    assert "neighbour" not in names(suspects)


def test_a_suspect_graded_alone_in_full_is_not_convicted_by_a_later_death(tmp_path):
    # Both had a short run alone already (checked), so both are graded alone in full: the first
    # passes, the grader alive; the second kills it. Only the second was in flight alone then.
    c = candidates(tmp_path, "killer", "innocent", "neighbour")
    out = tmp_path / "out"
    out.mkdir()
    journal = Journal(out, "key")
    died(journal, (c["killer"], False), (c["innocent"], False))
    yielded = resumed(out, c, {"innocent": "pass", "killer": "kills", "neighbour": "pass"},
                      alone=["innocent", "killer"], briefly=[])
    assert yielded == ["innocent"]
    convicted, _ = Journal(out, "key").suspects(list(c.values()))
    assert names(convicted) == ["killer"]


def test_a_suspect_in_flight_alone_when_the_grader_died_is_still_convicted(tmp_path):
    # Its short run alone killed the grader: the neighbours cleared before it are no killers.
    c = candidates(tmp_path, "a", "killer", "b")
    out = tmp_path / "out"
    out.mkdir()
    journal = Journal(out, "key")
    died(journal, (c["a"], False), (c["killer"], False), (c["b"], False))
    yielded = resumed(out, c, {"a": "pass", "b": "pass", "killer": "kills"},
                      alone=["b", "killer", "a"], briefly=["b", "killer", "a"])
    assert yielded == []
    convicted, suspects = Journal(out, "key").suspects(list(c.values()))
    assert names(convicted) == ["killer"] and suspects == []
    assert Journal(out, "key").checked() == {c["b"].target, c["killer"].target}


def test_resume_keeps_a_record_left_in_doubt_and_checks_it_after_the_batch(tmp_path):
    # batch._resumed: a's record (in doubt when the grader died) stays on the report and a is
    # rechecked, not graded again; b's record (cleared) stays; c (no record) is graded.
    from fuzz.grading.batch import _resumed
    from fuzz.grading.evaluate import base_record
    from fuzz.grading.options import GradeOptions
    from fuzz.grading.reports import write_reports
    from fuzz.outcomes import Verdict

    options = GradeOptions()
    c = candidates(tmp_path, "a", "b", "c")
    out = tmp_path / "out"
    out.mkdir()
    kept_records = []
    for name in ("a", "b"):
        record = base_record(c[name], options)
        record.verdict, record.reason = Verdict.PASS, "passed"
        kept_records.append(record)
    write_reports(kept_records, out)
    journal = Journal(out, options.key())
    died(journal, (c["a"], False), (c["b"], False))
    journal.doubted(c["a"])
    journal.doubted(c["b"])
    journal.doubted(c["b"], doubt=False)
    kept, convicted, suspects, pending, recheck = _resumed(list(c.values()), options, out, None, journal, resume=True)
    assert set(kept) == {c["a"].target, c["b"].target} and convicted == [] and suspects == []
    assert names(pending) == ["c"] and names(recheck) == ["a"]
