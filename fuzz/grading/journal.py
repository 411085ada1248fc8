"""Which candidates were running when the grader itself died, for ``--resume`` to judge.

SIGKILL cannot be blocked, ignored or traced to its sender, so a candidate that sends it to the
grader ends the run, and ``--resume`` would grade it again, which ends the run again. The journal
is the grader's memory across that death: each candidate is written down as it starts, and the
journal is removed whenever the grader ends a run itself (finished, interrupted, or failed with
an exception). So entries found by ``--resume`` are the candidates in flight when the grader died
without getting a word in (a candidate run beside others is over once its record is in the report:
``--resume`` keeps that record, and looks at the entries of the pending candidates only).

``--resume`` then grades those suspects first, each alone (written down as alone), the one that
started last first (a killer kills with its first calls); one that was already in flight alone
when the grader died is not run again: it gets ``crash``, "the grader died while it ran alone".
An innocent neighbour run alone before it gets its own verdict; once the killer is convicted, the
neighbours in flight beside it at that death need no run alone and are graded as any other, side
by side. (The grader dying of something else while a suspect runs alone, a power
cut or the machine's out-of-memory killer, convicts that suspect too; its reason says what was
seen, not what was proven.) A candidate whose record is written but which is still to be graded
again alone (a suspect of a stop or of an orphan's signal, :mod:`fuzz.grading.batch`) is written
down as in doubt until it is: should the grader die first, ``--resume`` keeps that record and
checks the candidate after the batch, briefly, beside the others so kept (as a freed neighbour
is): an attacker attacks again there, with its first calls, and is blamed, and the others keep
their records. It was over when the grader died, so it is no suspect of the death. Graded again
in full beside the others instead, the dozens of records in doubt when a killer of the grader
ran late (beside a stopper and an orphan's signals) held the batch a minute; run alone first,
one at a time, a batch's worth of neighbours named by one stopper held it for minutes.
Entries hold the candidate's file hash and the options' key: a changed file or other options
start afresh.

What is written when (a JSON object a line, each on disk before anything goes on):

* ``{"run": ...}`` as a run begins (:meth:`Journal.begin`): the entries after it are that run's;
* ``{"alone": false}`` as a candidate is handed to a driver beside others, ``{"alone": true}``
  (with ``"short": true`` for a short run) as it is handed one with nothing else in flight
  (:meth:`Journal.started`);
* ``{"ended": true}`` once a run alone is over and no longer counts as in flight, the grader
  alive, whatever came of it: a verdict, an attack shown, a short run that showed none
  (:meth:`Journal.ended`). A run alone with no such entry after it is one the grader died during:
  a death caused later, by another candidate, convicts no one that had run alone before it;
* ``{"doubted": true}`` as a record still to be settled is written, ``{"doubted": false}`` once it
  is (:meth:`Journal.doubted`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
from pathlib import Path

from ..isolation import RUN_ENV
from ..outcomes import Verdict
from .candidates import Candidate
from .evaluate import base_record
from .options import GradeOptions
from .record import GradeRecord
from .seal import seal, sealed

__all__ = ["CONVICTED_DETAILS", "CONVICTED_REASON", "JOURNAL", "Journal", "convicted_record"]

JOURNAL = ".in-flight.jsonl"


class Journal:
    def __init__(self, out: Path, key: str, *, seal_with: bytes | None = None, name: str = JOURNAL) -> None:
        self.path = Path(out) / name  # an op's batch keeps its own (fuzz.merge.batch)
        self.key = key
        self.seal_with = seal_with  # with a private seed: entries a candidate wrote are ignored
        self.token = secrets.token_hex(12)  # in every process of this run's environment (RUN_ENV)

    def begin(self) -> dict[str, str]:
        """Write this run's token down; the environment its processes get."""
        self._append({"run": self.token, "key": self.key})
        return {RUN_ENV: self.token}

    def kill_leftovers(self) -> list[int]:
        """Kill what the runs written here left behind when the grader died unheard (a candidate's
        daemon, adopted by init): every process whose environment carries one of their tokens.
        Read from /proc/PID/environ, the environment a process started with."""
        needles = {f"{RUN_ENV}={entry['run']}".encode() for entry in self._entries()
                   if isinstance(entry.get("run"), str) and entry["run"] != self.token}
        killed = []
        for entry in os.listdir("/proc") if needles else ():
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = set(f.read().split(b"\0"))
            except OSError:
                continue
            if environ & needles:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry), signal.SIGKILL)
                    killed.append(int(entry))
        return killed

    def _entries(self) -> list[dict]:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        entries = []
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut short by the death
            if isinstance(entry, dict) and entry.get("key") == self.key and sealed(entry, self.seal_with):
                entries.append(entry)
        return entries

    def suspects(self, pending: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
        """(Convicted, suspects) among ``pending``: in flight alone when the grader died (started
        alone, and no :meth:`ended` after), and in flight beside others when it died, the one
        started last first (an attack comes with a candidate's first calls); convicted in
        ``pending``'s order. A candidate in flight beside others only in runs whose death a
        convicted one explains (it was in flight then too) is neither: it needs no run alone, and
        is graded as any other; so is one whose record that run wrote in doubt (:meth:`doubted`):
        it was over by then."""
        alone, deaths = set(), []  # each dead run's candidates in the order they started
        for entry in self._entries():
            if "run" in entry:
                deaths.append([])
                continue
            ident = (entry.get("target"), entry.get("sha256"))
            if "doubted" in entry:  # its record is written: it was over before the death, unless it starts again
                if entry["doubted"] is True and deaths and ident in deaths[-1]:
                    deaths[-1].remove(ident)
                continue
            if entry.get("ended") is True or entry.get("cleared") is True:  # its run alone ended, the grader
                alone.discard(ident)  # alive ("cleared": what an earlier version wrote after a short run)
                continue
            if entry.get("alone") is True:
                alone.add(ident)
            if deaths:
                deaths[-1].append(ident)
        explained = [death for death in deaths if alone & set(death)]
        suspected = [ident for death in deaths if death not in explained for ident in reversed(death)]
        by_ident = {(c.target, c.sha256): c for c in pending}
        convicted = [c for c in pending if (c.target, c.sha256) in alone]
        suspects = [by_ident[ident] for ident in dict.fromkeys(suspected) if ident in by_ident and ident not in alone]
        return convicted, suspects

    def doubted(self, candidate: Candidate, doubt: bool = True) -> None:
        """``candidate``'s record is written, but it is a suspect of a stop or an orphan's signal
        that no candidate could be tied to yet, to be graded again alone after the batch (``doubt``
        False: no longer, it was). Should the grader die before, ``--resume`` keeps that record and
        checks it briefly after the batch (:meth:`in_doubt`), no suspect of the death."""
        self._append({"target": candidate.target, "sha256": candidate.sha256, "key": self.key, "doubted": doubt})

    def in_doubt(self) -> set[tuple[str, str | None]]:
        """(target, sha256) of the candidates whose records a dead run left in doubt (:meth:`doubted`)."""
        doubts: dict[tuple, bool] = {}
        for entry in self._entries():
            if isinstance(entry.get("doubted"), bool):
                doubts[(entry.get("target"), entry.get("sha256"))] = entry["doubted"]
        return {ident for ident, doubt in doubts.items() if doubt}

    def started(self, candidate: Candidate, *, alone: bool, short: bool = False) -> None:
        """``candidate`` starts (``alone``: nothing else in flight; ``short``: a short run, which shows
        an attack, not a verdict)."""
        entry = {"target": candidate.target, "sha256": candidate.sha256, "key": self.key, "alone": alone}
        self._append(dict(entry, short=True) if short else entry)

    def ended(self, candidate: Candidate) -> None:
        """``candidate``'s run alone (:meth:`started` with ``alone``, short or not) ended, and the
        grader lived, whatever its outcome: a later death is not its doing, even where
        ``--resume`` grades it again (a record of a short run has options other than the batch's)."""
        self._append({"target": candidate.target, "sha256": candidate.sha256, "key": self.key, "ended": True})

    def checked(self) -> set[str]:
        """The targets that had a short run alone already (:meth:`started`): suspected of a death
        again, they are graded alone in full."""
        return {entry["target"] for entry in self._entries() if entry.get("short") is True and "target" in entry}

    def _append(self, entry: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(seal(entry, self.seal_with)) + "\n")
            f.flush()
            os.fsync(f.fileno())  # on disk before a candidate can kill us

    def clear(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


CONVICTED_REASON = ("it attacked the grader: the grader died while it ran alone (killed without a word: SIGKILL, or "
                    "the machine's out-of-memory killer), so it was not run a third time")
CONVICTED_DETAILS = ("In flight when a grading run died, it ran again alone on --resume, and the grader died again "
                     "while it ran. Nothing can block SIGKILL; this is the verdict instead of a run that never ends.")
"""Why a candidate the journal convicts crashes (the row LSE's batch and an op's, fuzz.merge.batch)."""


def convicted_record(candidate: Candidate, options: GradeOptions) -> GradeRecord:
    """The record of a candidate that was running alone when the grader died."""
    record = base_record(candidate, options)
    record.verdict = Verdict.CRASH
    record.reason, record.details = CONVICTED_REASON, CONVICTED_DETAILS
    return record
