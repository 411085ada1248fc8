from __future__ import annotations

import threading
import time

import pytest

from fuzz.grading.part_queue import PartQueue, Parts


class FakeSlot:
    """A slot of the test's own: knows whether it was given back."""

    def __init__(self, present: bool = True) -> None:
        self.present, self.released = present, False

    def __len__(self) -> int:
        return int(self.present and not self.released)

    def release(self) -> None:
        self.released = True


class Recorder:
    """The caller's parts ("here") and the helpers' (:class:`Parts`): each sleeps ``seconds`` and says who ran it."""

    def __init__(self, seconds: float = 0.05, fails: set[int] = frozenset()) -> None:
        self.seconds, self.fails, self.ran, self.lock = seconds, fails, [], threading.Lock()

    def part(self, who: str):
        def run(index: int) -> tuple[str, int, str]:
            time.sleep(self.seconds)
            with self.lock:
                self.ran.append((who, index))
            return who, index, "fail" if index in self.fails else "pass"
        return run


def _run(recorder: Recorder, count: int, *, held=(), take=lambda: FakeSlot(False), stopped=lambda: False,
         close=lambda: None, helper=None):
    """The caller's side, as fuzz.grading.evaluate._in_turn does it: claim, run, keep; stop at a failure."""
    parts = Parts(count, helper=helper or recorder.part("helper"), held=list(held), take=take, stopped=stopped,
                  close=close, poll=0.01).start()
    for index in iter(parts.claim, None):
        if parts.keep(index, recorder.part("here")(index))[2] == "fail":
            break
    return parts.finish()


def test_the_queue_gives_each_part_once_lowest_first():
    queue = PartQueue(3)
    assert [queue.claim() for _ in range(4)] == [0, 1, 2, None] and queue.empty


def test_with_no_slot_every_part_runs_here_in_part_order():
    recorder = Recorder()
    done = _run(recorder, 4)
    assert recorder.ran == [("here", 0), ("here", 1), ("here", 2), ("here", 3)]
    assert sorted(done) == [0, 1, 2, 3]
    ends = [done[index][1] for index in range(4)]
    assert ends == sorted(ends) and ends[0] >= 0.05


def test_slots_held_at_the_start_start_helpers_at_once_and_are_given_back():
    recorder, held, closed = Recorder(seconds=0.2), [FakeSlot(), FakeSlot(), FakeSlot()], []
    done = _run(recorder, 4, held=held, close=lambda: closed.append(1))
    assert sorted(done) == [0, 1, 2, 3] and sorted(index for _, index in recorder.ran) == [0, 1, 2, 3]
    assert ("here", 0) in recorder.ran and sum(who == "helper" for who, _ in recorder.ran) == 3
    assert all(slot.released for slot in held) and closed == [1]
    assert max(at for _, at in done.values()) < 0.6  # side by side: four parts of 0.2 s, not 0.8 s


def test_a_slot_freed_later_starts_a_helper_for_the_next_unclaimed_part():
    recorder, given = Recorder(seconds=0.15), []

    def take():
        slot = FakeSlot(present=not given)  # one slot comes free, once
        if slot.present:
            given.append(slot)
        return slot

    done = _run(recorder, 3, take=take)
    assert sorted(done) == [0, 1, 2]
    helped = [index for who, index in recorder.ran if who == "helper"]
    assert ("here", 0) in recorder.ran and len(helped) == 1 and helped[0] in (1, 2)  # the one slot, one part
    assert given and given[0].released


def test_a_part_here_that_decides_stops_the_claims():
    recorder = Recorder(fails={1})
    done = _run(recorder, 4)
    assert recorder.ran == [("here", 0), ("here", 1)] and sorted(done) == [0, 1]


def test_no_part_is_claimed_once_stopped_and_spare_slots_go_back():
    recorder, held, stop = Recorder(), [FakeSlot(), FakeSlot()], threading.Event()
    stop.set()  # another part failed (or the memory phase found a stray access) already
    done = _run(recorder, 4, held=held, stopped=stop.is_set)
    assert recorder.ran == [("here", 0)] and sorted(done) == [0]
    assert all(slot.released for slot in held)


def test_a_helpers_exception_is_raised_once_every_part_ended():
    recorder = Recorder()

    def broken(index: int):
        raise RuntimeError(f"the driver of part {index} failed")

    with pytest.raises(RuntimeError, match="the driver of part 1 failed"):
        _run(recorder, 3, held=[FakeSlot()], helper=broken)
    assert ("here", 0) in recorder.ran and ("here", 2) in recorder.ran


def test_abandoned_no_helper_starts_and_close_runs_once():
    recorder, closed = Recorder(), []
    parts = Parts(4, helper=recorder.part("helper"), held=[], take=lambda: FakeSlot(False), stopped=lambda: False,
                  close=lambda: closed.append(1), poll=0.01).start()
    assert parts.claim() == 0
    parts.abandon()  # the target did not load: no part of it runs
    time.sleep(0.05)
    parts.abandon()
    assert recorder.ran == [] and closed == [1]
