"""A stop of a run's parts for the tests (a :class:`fuzz.run.RunStop`): it says whether the other
parts failed as its test sets, and counts how often this part said it failed."""

from __future__ import annotations


class FixedStop:
    def __init__(self, others_failed: bool) -> None:
        self.others, self.marked = others_failed, 0

    def failed(self) -> None:
        self.marked += 1

    def others_failed(self) -> bool:
        return self.others
