"""How the shares of one run split its stream of examples (``check(share=(k, K))``: the mutation
gate's jobs on a GPU host, :func:`fuzz.mutation.runner.gate_shares`).

Each of the K jobs draws the whole stream and runs the examples of its own launch classes, so the
shares compile apart: on a cold GPU a share's time is mostly its compiles. The launch classes of
one group (the dtype and N's power of two, :func:`fuzz.shrinking.launch_class`'s first two: what a
kernel's binaries depend on most) go to one share, so a binary is compiled once. A group goes to
the share with the fewest launch classes so far when the stream first shows it; share 0 starts
with the classes of the run's last examples, which only it runs (the float16 overflow row, the
views past 2**31 elements), and owns their groups. Every share sees the same stream (Hypothesis
draws the same examples whatever a passing body did), so every share makes the same choices, and
the shares stay disjoint and together the whole.

Measured before this, on an H200: the gate's four jobs of a cold ``lse-fuzz mutants -j 14`` (three
shares, grouped by a hash of the group, and the broken kernel's run) ended 9, 26, 37 and 40 s after
they started.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ShareSplit"]


class ShareSplit:
    """The owner of each launch class among ``count`` shares (see the module docstring);
    ``preload``: the classes of the examples share 0 runs beyond the stream."""

    def __init__(self, count: int, preload: Iterable[tuple] = ()) -> None:
        self.count = count
        self.load = [0] * count  # the launch classes each share runs so far
        self._owners: dict[tuple, int] = {}  # (dtype, N's power of two) -> its share
        self._seen: set[tuple] = set()
        for launch in preload:
            self._owners.setdefault(launch[:2], 0)
            self._count(launch)

    def owner(self, launch: tuple) -> int:
        """The share that runs the examples of launch class ``launch``."""
        group = launch[:2]
        if group not in self._owners:
            self._owners[group] = min(range(self.count), key=lambda k: (self.load[k], k))
        self._count(launch)
        return self._owners[group]

    def _count(self, launch: tuple) -> None:
        if launch not in self._seen:
            self._seen.add(launch)
            self.load[self._owners[launch[:2]]] += 1
