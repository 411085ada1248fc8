"""Loadable TARGET strings for the bundled mutants: ``mutants.patched:<name>`` is mutant <name>'s ``lse``.

Workers load implementations from ``module:attribute`` strings, and a mutant has no file of its own
to point at: it is a patch of the reference package. This module's attributes are resolved on first
access (PEP 562 ``__getattr__``), each loaded once per process from a shadow copy of the package
(:func:`fuzz.mutation.patch.load`):

    mutants.patched:no_max_added    the reference package with no_max_added's patch, its ``lse``
    mutants.patched:unmutated       the empty patch, loaded the same way
    mutants.patched:grad_over_input a backward mutant: its package's ``lse_autograd`` (FUNCTION)
    mutants.patched:merge_no_empty_guard  a merge mutant: its package's ``merge_state`` (FUNCTION)
"""

from __future__ import annotations

import importlib

from fuzz.mutation.patch import Patch, load

from . import BACKWARD_NAMES, MERGE_NAMES, NAMES

UNMUTATED = "unmutated"


def __getattr__(name: str):
    if name == UNMUTATED:
        return load(None).lse
    if name not in NAMES and name not in BACKWARD_NAMES and name not in MERGE_NAMES:
        # AttributeError, as for any missing attribute: `hasattr`, `from ... import` and the target
        # loader rely on it (and dunder lookups must not load anything).
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; "
                             f"choose {UNMUTATED!r} or a mutant: {', '.join(NAMES)}; "
                             f"a backward mutant: {', '.join(BACKWARD_NAMES)}; "
                             f"a merge mutant: {', '.join(MERGE_NAMES)}")
    data = importlib.import_module(f"{__package__}.{name}")
    # A backward mutant is judged through the reference's autograd function, a merge mutant through
    # its merge_state (each file's FUNCTION).
    return getattr(load(Patch(data.PATH, data.ANCHOR, data.REPLACEMENT), name=name), getattr(data, "FUNCTION", "lse"))


def __dir__() -> list[str]:
    return sorted([*globals(), UNMUTATED, *NAMES, *BACKWARD_NAMES, *MERGE_NAMES])
