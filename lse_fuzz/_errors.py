"""The base of every exception lse-fuzz raises on purpose: ``except lse_fuzz.LseFuzzError`` catches
them all (bad input, a failed check, a harness fault, a patch that no longer applies, ...).

It lives here, in the one package whose name no other project uses, rather than in ``reference``
(the lowest layer): :class:`~lse_fuzz.PackageClash` must derive from it, and it is raised exactly
when ``reference`` is not lse-fuzz's own. Nothing is imported, so ``reference`` can import it first.

Each project exception keeps the built-in base that says what kind of error it is
(``InvalidArgument`` is a ``ValueError``, ``CheckFailure`` an ``AssertionError``). Two exceptions
stand outside on purpose: ``ImplLost`` is a ``BaseException`` so that no ``except Exception`` in
the harness or in the implementation under test can swallow the loss of its worker, and
``CandidateRaised`` stands for an exception the implementation raised, not one of lse-fuzz's.
"""

from __future__ import annotations

__all__ = ["LseFuzzError"]


class LseFuzzError(Exception):
    """The common base of lse-fuzz's exceptions; each subclass also keeps its built-in kind."""
