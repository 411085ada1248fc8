"""Which candidates a grading batch holds, what each is called in reports, and the order they start in."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reference.errors import InvalidArgument

from .static_scan import scan
from ..target import DEFAULT_FUNCTION, parse_target

__all__ = ["Candidate", "discover", "schedule"]


@dataclass(frozen=True)
class Candidate:
    name: str  # as reports show it: relative to the working directory when inside it
    path: str  # absolute file path ("" for a module target)
    target: str  # a resolved TARGET: path:function or module:function
    digest: str | None = None  # the sha256 of the bytes graded, pinned when the batch took them (grading.snapshot)

    @property
    def sha256(self) -> str | None:
        if self.digest is not None:
            return self.digest
        try:
            return hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        except OSError:
            return None

    @classmethod
    def of_target(cls, target: str, *, name: str | None = None) -> Candidate:
        """The candidate a resolved TARGET names (a file or a module)."""
        location = target.rpartition(":")[0]
        path = location if parse_target(target).is_file else ""
        return cls(name=name or target, path=path, target=target)


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def discover(paths: Iterable[str], *, function: str = DEFAULT_FUNCTION) -> list[Candidate]:
    """The candidates under ``paths`` (files, ``file.py:func``, or directories searched for
    ``*.py``), sorted and without duplicates. InvalidArgument for a missing path or a directory
    with no candidate in it."""
    found: dict[tuple[str, str], Candidate] = {}
    for given in paths:
        location, func = given, function
        if given.rpartition(":")[0].endswith(".py"):
            parsed = parse_target(given, function=function, name="path")
            location, func = parsed.location, parsed.function
        path = Path(location).expanduser()
        if not path.exists():
            raise InvalidArgument(f"path={given!r}: no such file or directory.")
        if path.is_dir():
            files = sorted(
                f for f in path.rglob("*.py")
                if f.name != "__init__.py"
                and not any(part.startswith(".") or part == "__pycache__" for part in f.relative_to(path).parts)
            )
            if not files:
                raise InvalidArgument(f"path={given!r}: no candidate *.py files in this directory.")
        elif path.suffix != ".py":
            raise InvalidArgument(f"path={given!r} is not a .py file.")
        else:
            files = [path]
        for file in files:
            resolved = file.resolve()
            key = (str(resolved), func)
            found.setdefault(key, Candidate(name=_display(resolved) + ("" if func == function else f":{func}"),
                                            path=str(resolved), target=f"{resolved}:{func}"))
    return sorted(found.values(), key=lambda c: c.name)


def schedule(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The order candidates start in: those that define a Triton kernel first, then the rest.

    A kernel is compiled on the host for each new launch configuration the fuzzer reaches (about
    a second each on an H200's host; dozens per candidate), so kernel candidates take minutes
    where a plain-PyTorch or broken one takes seconds. Starting the long ones first (longest
    processing time first) keeps a batch from ending on a tail of one compiling candidate while
    the other jobs sit idle. Each group keeps its name order; reports are sorted by name anyway.
    """

    def defines_kernel(candidate: Candidate) -> bool:
        try:
            return not any(f.flag == "no_triton_kernel" for f in scan(candidate.path))
        except (OSError, SyntaxError, ValueError):
            return False  # it will not load: seconds, not minutes

    return sorted(candidates, key=lambda c: not defines_kernel(c))  # stable: name order within each group
