"""Verdicts kept between runs, so a re-run judges only the mutants whose inputs changed.

A verdict's key hashes everything that decides it: the mutant's edit, the text of every file of the
kernel, the tool's version and its own source (a checkout between releases changes its checks, not
its version number), and the options (the fuzzer's for a fuzz verdict; the command for a
``--tests`` verdict). Editing the kernel changes its files' text, so every mutant of that kernel is
judged again; another kernel's verdicts, and the fuzz verdicts when only ``--tests`` changed, are
reused. One small JSON file per verdict under ``<dir>/<key[:2]>/<key>.json``, written atomically,
so parallel runs never see half a verdict; a file that does not parse is a miss.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

from .._version import __version__

__all__ = ["VerdictCache", "verdict_key"]


def verdict_key(*parts: object) -> str:
    """The key of a verdict decided by ``parts`` (JSON-able) and this tool: its version and source."""
    text = json.dumps([__version__, tool_digest(), *parts], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def tool_digest() -> str:
    """A hash of the fuzzer's own source (every ``.py`` of this package, by path and text): a change
    of a check judges every mutant again, where a cached verdict would report what the old checks
    found (a cache kept between CI runs would let a regression through)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class VerdictCache:
    """``get(key)`` / ``put(key, value)`` on a directory; ``None`` turns caching off."""

    def __init__(self, directory: Path | str | None) -> None:
        self.directory = None if directory is None else Path(directory)
        self.reused = 0

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, *, reuse: bool = True) -> dict | None:
        """The value kept under ``key``, or None; ``reuse=False`` for a step on the way to a verdict
        (not counted in :attr:`reused`)."""
        if self.directory is None:
            return None
        try:
            value = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        self.reused += reuse
        return value

    def put(self, key: str, value: dict) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, staging = tempfile.mkstemp(prefix=".", dir=path.parent)
        with os.fdopen(fd, "w") as handle:
            json.dump(value, handle)
        os.replace(staging, path)
