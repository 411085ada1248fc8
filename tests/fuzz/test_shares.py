"""fuzz.shares: which share of a run's stream runs which launch classes."""

from __future__ import annotations

import random

from fuzz.shares import ShareSplit


def _launch(dtype: str, block: int, stride: int = 1) -> tuple:
    return (dtype, block, True, ((block, 1), (stride, 1)))


def test_a_new_group_goes_to_the_share_with_the_fewest_classes_and_stays_there():
    split = ShareSplit(3)
    assert [split.owner(_launch("float32", b)) for b in (8, 16, 32)] == [0, 1, 2]
    assert split.owner(_launch("float32", 8, stride=7)) == 0  # its group's share, a class more there
    assert split.load == [2, 1, 1]
    assert split.owner(_launch("float16", 8)) == 1  # the lightest, the lowest of equals
    assert split.owner(_launch("float32", 8)) == 0 and split.load == [2, 2, 1]  # seen: counted once


def test_a_group_stays_with_its_share_whatever_comes_after():
    split = ShareSplit(2)
    assert split.owner(_launch("float16", 65536)) == 0 and split.owner(_launch("float32", 4)) == 1
    assert split.owner(_launch("float16", 65536, stride=3)) == 0  # its group's share, though heavier now
    assert split.load == [2, 1] and split.owner(_launch("bfloat16", 64)) == 1


def test_every_share_makes_the_same_choices_and_the_loads_stay_even():
    # Each share's run draws the whole stream: the same stream gives every share the same owners.
    rng = random.Random(0)
    stream = [_launch(rng.choice(["float32", "float16", "bfloat16", "float64"]), 1 << rng.randint(0, 16),
                      stride=rng.choice([1, 2, 16, 17])) for _ in range(400)]
    owners = [[ShareSplit(3).owner(launch) for launch in stream] for _ in range(2)]
    assert owners[0] == owners[1]
    split = ShareSplit(3)
    for launch in stream:
        split.owner(launch)
    assert max(split.load) - min(split.load) <= 4, split.load  # a group's classes at most apart
