"""One unit of a pool's work (:class:`Job`), apart from the pool so that what handles jobs needs no pool."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Job"]


@dataclass(frozen=True)
class Job:
    """One unit of work: ``entry`` (``module:function``) is called with ``payload`` in a driver."""

    key: str
    entry: str
    payload: dict = field(default_factory=dict)
