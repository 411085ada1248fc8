"""The one Mutant: a patch of a kernel's source, with what the runner and the reports need to know.

Mutants come from two sources and are the same thing: an operator applied at a site
(:func:`fuzz.mutation.sites.generate`, ``lse-fuzz mutate``) or a pitfall of the bundled catalog
(:func:`fuzz.mutation.bundled.catalog`, the files of ``mutants/``, ``lse-fuzz mutants``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from .patch import Patch, apply, diff, load, position

__all__ = ["Mutant"]


@dataclass(frozen=True)
class Mutant:
    """One anchored edit of a kernel: ``patch`` applied to ``sources`` (the kernel's files by key).

    ``start``/``end`` are the offsets in the file of the text the edit changes, ``replacement`` what
    it puts there (a Stryker location; the patch's anchor may be wider, to be unique). ``statement``
    is the lines whose execution runs the edited code (coverage); ``guards`` the static branches of
    a kernel it lies in: (a ``tl.constexpr`` parameter, the truth value it must have), from
    ``if NAME:``, ``if not NAME:`` and their ``else`` (a compiled kernel has no line coverage; the
    constexprs of its launches say whether such a branch ran). ``expected_check``: the check that
    should kill it ("" for any); ``cpu_check``: the one that kills it first on the CPU, where it is
    another ("memory_bounds" for a mutant that reads out of bounds: the interpreter sees the access). ``target``: the TARGET a worker loads it by, when it has a name of
    its own (``mutants.patched:<name>``); otherwise a file written to the cache.
    """

    name: str
    operator: str  # the operator's name; a catalog mutant's own name
    pitfall: str
    documented: str  # where the field documents the pitfall
    patch: Patch = field(repr=False)
    sources: dict[str, str] = field(repr=False, compare=False, hash=False)
    start: int
    end: int
    replacement: str
    function: str = ""  # the function the edit lies in
    kernel: bool = False  # in a @triton.jit function (else in the launcher)
    statement: tuple[int, int] = (0, 0)
    guards: tuple[tuple[str, bool], ...] = ()
    expected_check: str = ""
    cpu_check: str = ""
    target: str | None = None
    module: str | None = None  # a catalog mutant's module (its docstring and minimal input)

    @property
    def file(self) -> str:
        """The key of the edited file in :attr:`sources`."""
        return self.patch.path

    @property
    def original(self) -> str:
        return self.sources[self.file][self.start:self.end]

    @property
    def line(self) -> int:
        return position(self.sources[self.file], self.start)[0]

    @property
    def column(self) -> int:
        return position(self.sources[self.file], self.start)[1]

    def location(self) -> tuple[str, int, int, int, int]:
        """(file, line, column, end_line, end_column): 1-based, the end exclusive (Stryker's)."""
        text = self.sources[self.file]
        return (self.file, *position(text, self.start), *position(text, self.end))

    @property
    def key(self) -> str:
        """Identifies the edit (part of its cache key)."""
        text = f"{self.operator}\0{Path(self.file).name}\0{self.start}\0{self.end}\0{self.replacement}"
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def mutated_sources(self) -> dict[str, str]:
        return apply(self.patch, name=self.name, sources=self.sources)

    def diff(self) -> str:
        """The edit as a unified diff of the file it patches."""
        return diff(self.patch, name=self.name, sources=self.sources)

    def load(self):
        """The mutant's ``lse``, for a mutant of the reference package (a shadow copy with the patch)."""
        return load(self.patch, name=self.name).lse
