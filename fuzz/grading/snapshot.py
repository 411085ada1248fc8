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
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from pathlib import Path

from .candidates import Candidate

__all__ = ["encode", "materialize", "restore_paths"]


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
