"""How the shares of one run split its stream of examples (``check(share=(k, K))``: the mutation
gate's jobs on a GPU host, :func:`fuzz.mutation.runner.gate_shares`).

Each of the K jobs draws the whole stream and runs the examples of its own launch classes, so the
shares compile apart: on a cold GPU a share's time is mostly its compiles. The launch classes of
one group (the dtype and N's power of two, :func:`fuzz.shrinking.launch_class`'s first two: what a
kernel's binaries depend on most) go to one share, so a binary is compiled once. A group goes to
the share with the fewest launch classes so far when the stream first shows it. The run's last
examples (the padded rows, the views past 2**31 elements, the float16 overflow row) come after the
stream, each to its group's share (a group new by then is placed as any other). Every share sees
the same stream (Hypothesis draws the same examples whatever a passing body did) and the same last
examples, so every share makes the same choices, and the shares stay disjoint and together the whole.

Measured before this, on an H200: the gate's four jobs of a cold ``lse-fuzz mutants -j 14`` (three
shares, grouped by a hash of the group, and the broken kernel's run) ended 9, 26, 37 and 40 s after
they started. On an H100 (2026-12-06), when share 0 still ran every last example and owned their
groups from the start, four shares ended 17-18 s after they started but share 0 28-29 s (25
compiles against 16-18).
"""

from __future__ import annotations

__all__ = ["ShareSplit"]


class ShareSplit:
    """The owner of each launch class among ``count`` shares (see the module docstring)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.load = [0] * count  # the launch classes each share runs so far
        self._owners: dict[tuple, int] = {}  # (dtype, N's power of two) -> its share
        self._seen: set[tuple] = set()

    def owner(self, launch: tuple) -> int:
        """The share that runs the examples of launch class ``launch``."""
        group = launch[:2]
        if group not in self._owners:
            self._owners[group] = min(range(self.count), key=lambda k: (self.load[k], k))
        if launch not in self._seen:
            self._seen.add(launch)
            self.load[self._owners[group]] += 1
        return self._owners[group]
