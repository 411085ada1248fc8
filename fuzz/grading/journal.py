"""Which candidates were running when the grader itself died, for ``--resume`` to judge.

SIGKILL cannot be blocked, ignored or traced to its sender, so a candidate that sends it to the
grader ends the run, and ``--resume`` would grade it again, which ends the run again. The journal
is the grader's memory across that death: each candidate is written down as it starts, and the
journal is removed whenever the grader ends a run itself (finished, interrupted, or failed with
an exception). So entries found by ``--resume`` are the candidates in flight when the grader died
without getting a word in.

``--resume`` then grades those suspects first, each alone (written down as alone); one that was
already in flight alone when the grader died is not run again: it gets ``crash``, "the grader
died while it ran alone". An innocent neighbour that was merely in flight beside it runs alone
and gets its own verdict. (The grader dying of something else while a suspect runs alone, a power
cut or the machine's out-of-memory killer, convicts that suspect too; its reason says what was
seen, not what was proven.) Entries hold the candidate's file hash and the options' key: a
changed file or other options start afresh.
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

__all__ = ["JOURNAL", "Journal", "convicted_record"]

JOURNAL = ".in-flight.jsonl"


class Journal:
    def __init__(self, out: Path, key: str, *, seal_with: bytes | None = None) -> None:
        self.path = Path(out) / JOURNAL
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
        """(Convicted, suspects) among ``pending``: in flight alone when the grader died, and in
        flight beside others; each in ``pending``'s order."""
        alone, seen = set(), set()
        for entry in self._entries():
            ident = (entry.get("target"), entry.get("sha256"))
            seen.add(ident)
            if entry.get("alone") is True:
                alone.add(ident)
        convicted = [c for c in pending if (c.target, c.sha256) in alone]
        suspects = [c for c in pending if (c.target, c.sha256) in seen and (c.target, c.sha256) not in alone]
        return convicted, suspects

    def started(self, candidate: Candidate, *, alone: bool) -> None:
        self._append({"target": candidate.target, "sha256": candidate.sha256, "key": self.key, "alone": alone})

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


def convicted_record(candidate: Candidate, options: GradeOptions) -> GradeRecord:
    """The record of a candidate that was running alone when the grader died."""
    record = base_record(candidate, options)
    record.verdict = Verdict.CRASH
    record.reason = ("it attacked the grader: the grader died while it ran alone (killed without a word: SIGKILL, or "
                     "the machine's out-of-memory killer), so it was not run a third time")
    record.details = ("In flight when a grading run died, it ran again alone on --resume, and the grader died again "
                      "while it ran. Nothing can block SIGKILL; this is the verdict instead of a run that never ends.")
    return record
