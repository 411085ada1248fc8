"""The project's one exception for bad user input.

Internal invariants use ``assert``; anything a user can get wrong (a tensor of the wrong rank, an
unknown option value, a target that cannot be loaded) raises :class:`InvalidArgument` with the
offending value and a hint, validated in one place per entry point.
"""

from __future__ import annotations

from lse_fuzz._errors import LseFuzzError


class InvalidArgument(LseFuzzError, ValueError):
    """A value passed by the user cannot be used; the message names it and says how to fix it."""
