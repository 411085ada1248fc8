"""Grading what was submitted: a private copy of each candidate file, taken when the batch starts.

A batch's candidates run as one user, one after another or side by side, so one of them can write
to the file of another (append a line that makes it fail to load, or swap its kernel for a
correct one) before that one is graded. So ``grade`` reads every candidate file once, when the
batch starts, and sends its bytes with the job; the driver grades a copy of them in a folder of
its own (named by the content's hash, so a file keeps its Triton compile cache across runs), and
the record, whose ``sha256`` is that of the bytes graded, names the original path again. A Ray
task does the same on its node (:mod:`.ray_executor`), where the original file does not exist.

This stops a candidate that writes to another's file by the path the batch was given. It is not
a sandbox: a candidate that searches the machine can find the copies too (see the README's
threat model).

A batch outlives its runs: a candidate that kills the grader ends one, and ``--resume`` starts
another. The bytes taken are kept in the report's folder (``.submitted.json``), so that a file a
candidate wrote to while an earlier run graded the batch is graded as it was submitted, not as
it was left (a hostile batch on an H200 had 60 of its 61 records ``load_error``, "sabotaged by a
neighbour", after a resume read the files again). :func:`take` keeps the earlier bytes of a file
whose content changed and whose inode change time (``st_ctime``, which no unprivileged process
can set back, unlike the modification time) falls after those bytes were taken and: before the
earlier run ended, which named the file changed as it ended; or, for a run killed without a word,
two seconds after its last sign of life (a run touches ``.alive`` every second while it grades). A file edited after that, by a person fixing a kernel between runs, is graded anew,
as ``--resume`` always did.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from .candidates import Candidate

__all__ = ["ROW_FILES", "SUBMITTED", "Submission", "TakenFiles", "changed_note", "encode", "materialize", "restore_paths", "take"]

SUBMITTED = ".submitted.json"
HEARTBEAT = ".alive"
_BEAT_SECONDS = 1.0


@dataclass(frozen=True)
class TakenFiles:
    """The names of a batch's own files in its report's folder: what it took, its heartbeat, and what
    else it writes while it grades (its signs of life). An op's batch has names of its own, so the
    row LSE's batch and an op's can share one folder (:mod:`fuzz.merge.batch`)."""

    submitted: str = SUBMITTED
    heartbeat: str = HEARTBEAT
    written: tuple[str, ...] = ("grade.jsonl", ".in-flight.jsonl")  # the report and the journal

    @property
    def signs_of_life(self) -> tuple[str, ...]:
        return (self.heartbeat, *self.written)


ROW_FILES = TakenFiles()
"""The row LSE's batch (``lse-fuzz grade``)."""


def encode(candidate: Candidate) -> str | None:
    """The candidate's file as the job carries it (None for a module target, or a file that cannot
    be read now: the driver then loads the original and reports what is wrong with it)."""
    if not candidate.path:
        return None
    try:
        return base64.b64encode(Path(candidate.path).read_bytes()).decode()
    except OSError:
        return None


def materialize(candidate: Candidate, source: str | None, home: Path | None = None) -> tuple[Candidate, dict]:
    """The candidate to grade (a private copy of ``source`` under ``home``, by default a folder of
    this user's in the temporary directory) and the paths to map back: {copy's: original's}."""
    if source is None:
        return candidate, {}
    data = base64.b64decode(source)
    if home is None:
        home = Path(tempfile.gettempdir()) / f"lse-fuzz-candidates-{os.getuid()}"
    folder = home / hashlib.sha256(data).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    copy = folder / Path(candidate.path).name
    if not copy.is_file() or copy.read_bytes() != data:
        partial = folder / f".{copy.name}.{os.getpid()}"
        partial.write_bytes(data)
        partial.replace(copy)  # atomic: a driver grading the same bytes never reads half a file
    function = candidate.target.rpartition(":")[2]
    private = Candidate(name=candidate.name, path=str(copy), target=f"{copy}:{function}")
    return private, {private.target: candidate.target, private.path: candidate.path}


def restore_paths(record: dict, mapping: dict) -> dict:
    """``record`` with every path of ``mapping``'s keys written as its value (longest first)."""
    if not mapping:
        return record
    text = json.dumps(record)
    for there, here in sorted(mapping.items(), key=lambda item: -len(item[0])):
        text = text.replace(json.dumps(there)[1:-1], json.dumps(here)[1:-1])
    return json.loads(text)


@dataclass
class Submission:
    """A batch's candidates as taken when a run starts: each file's bytes (base64, None for a module
    or an unreadable file) and its digest pinned in the candidate (:class:`.candidates.Candidate`)."""
    candidates: list[Candidate]
    sources: dict[str, str | None]  # target -> the bytes to grade
    changed_while_graded: list[Candidate] = field(default_factory=list)  # graded as submitted, not as found
    path: Path | None = None
    names: TakenFiles = ROW_FILES

    @contextlib.contextmanager
    def grading(self):
        """While the run grades: a heartbeat every second, and its end written down (a later change
        of a file is then a person's, not a candidate's)."""
        if self.path is None:
            yield
            return
        stop, beat = threading.Event(), self.path.with_name(self.names.heartbeat)

        def beating() -> None:
            while True:
                with contextlib.suppress(OSError):
                    beat.touch()
                if stop.wait(_BEAT_SECONDS):
                    return

        thread = threading.Thread(target=beating, name="lse-fuzz-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            # The files a candidate changed meanwhile, named while the run can still tell (a person's
            # edit comes after ended_ns, by the file system's clock, the one change times are read on).
            changed = [c.target for c in self.candidates if c.path and encode(c) != self.sources[c.target]]
            try:
                beat.touch()
                ended = beat.stat().st_mtime_ns
            except OSError:
                ended = time.time_ns()
            _update(self.path, ended_ns=ended, changed_during=changed)


def changed_note(names: list[str]) -> str:
    """The line a command prints for the files it graded as submitted, not as found."""
    named = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (f"lse-fuzz: {len(names)} candidate file(s) changed while an earlier run of this batch was grading "
            f"(a candidate writing to its neighbours), graded as submitted: {named}; a file you edit after a "
            "run ends is graded anew")


def _digest(source: str | None) -> str | None:
    return None if source is None else hashlib.sha256(base64.b64decode(source)).hexdigest()


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {}


def _update(path: Path, **fields) -> None:
    data = _load(path) | fields
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(data), encoding="utf-8")
    partial.replace(path)


def _last_sign_of_life(out: Path, earlier: dict, names: TakenFiles) -> int:
    """When the run before this one was last seen alive (ns): its end, or its last write, the
    heartbeat included, and the second in which it may have died after its last beat."""
    if isinstance(earlier.get("ended_ns"), int):
        return earlier["ended_ns"]
    times = [0]
    for name in names.signs_of_life:
        try:
            times.append((out / name).stat().st_mtime_ns)
        except OSError:
            pass
    return max(times) + int(2e9 * _BEAT_SECONDS)


def _changed_at(path: str) -> int | None:
    try:
        return os.stat(path).st_ctime_ns
    except OSError:
        return None


def _changed_while_graded(candidate: Candidate, taken: int, alive_until: int, earlier: dict) -> bool:
    """Whether the file's last change came while a run graded the batch: after its bytes were taken,
    and before the run ended with the file named changed, or before a killed run's last sign of life."""
    ctime = _changed_at(candidate.path)
    if ctime is None or ctime < taken:
        return False
    if isinstance(earlier.get("ended_ns"), int):
        named = earlier.get("changed_during")
        return ctime <= alive_until and isinstance(named, list) and candidate.target in named
    return ctime <= alive_until


def take(candidates: list[Candidate], out: Path, *, resume: bool, names: TakenFiles = ROW_FILES) -> Submission:
    """Read every candidate file now, for this run to grade (``resume``: an earlier run's bytes are
    kept for a file a candidate changed while that run graded it, see the module's docstring), and
    write them down in ``out`` (under ``names``)."""
    started = time.time_ns()
    path = Path(out) / names.submitted
    earlier = _load(path) if resume else {}
    alive_until = _last_sign_of_life(Path(out), earlier, names) if earlier else 0
    files: dict[str, dict] = {}
    pinned, sources, changed = [], {}, []
    for candidate in candidates:
        source = encode(candidate)
        entry = {"source": source, "taken_ns": started}
        before = earlier.get("files", {}).get(candidate.target)
        if isinstance(before, dict) and isinstance(before.get("taken_ns"), int) and before.get("source") != source \
                and _changed_while_graded(candidate, before["taken_ns"], alive_until, earlier):
            entry = before
            changed.append(candidate)
        files[candidate.target] = entry
        sources[candidate.target] = entry["source"]
        pinned.append(replace(candidate, digest=_digest(entry["source"])))
    _update(path, files=files, started_ns=started, ended_ns=None, changed_during=None)
    return Submission(candidates=pinned, sources=sources, changed_while_graded=changed, path=path, names=names)
