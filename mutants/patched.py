"""Loadable TARGET strings for the mutants: ``mutants.patched:<name>`` is mutant <name>'s ``lse``.

The mutation harness and ``lse-fuzz`` load implementations from ``module:attribute`` strings (in
worker processes too), and a mutant has no file of its own to point at: it is a patch of the
reference package. This module's attributes are resolved on first access (PEP 562 ``__getattr__``):

    mutants.patched:no_max_added    the reference package with no_max_added's patch, its ``lse``
    mutants.patched:unmutated       the empty patch, loaded the same way (the mutation gate's kernel)

Each is loaded once per process (see :func:`mutants._patch.load`).
"""

from __future__ import annotations

from . import MUTANTS, _patch

UNMUTATED = "unmutated"


def __getattr__(name: str):
    if name == UNMUTATED:
        return _patch.load(None).lse
    mutant = MUTANTS.get(name)
    if mutant is None:
        # AttributeError, as for any missing attribute: `hasattr`, `from ... import` and the
        # target loader all rely on it (and dunder lookups must not load anything).
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; "
                             f"choose {UNMUTATED!r} or a mutant: {', '.join(MUTANTS)}")
    return mutant.load()


def __dir__() -> list[str]:
    return sorted([*globals(), UNMUTATED, *MUTANTS])
