"""Slow is a finding, a hang is a verdict, and a time limit turns slow into a failure."""

from __future__ import annotations

import re
import time
from pathlib import Path

import doubles
import pytest

import lse_fuzz
import fuzz.checks.context as context
from fuzz.isolation import IsolatedImpl
from fuzz.outcomes import ImplLost, Outcome
from fuzz.timing import HANG_FACTOR, SlowCall, best_per_call, hang_deadline

CANDIDATES = Path(__file__).resolve().parents[1] / "implementations" / "candidates"


def sleepy(x):
    time.sleep(0.3)
    return doubles.lse_float64(x)


def test_a_slow_correct_call_is_a_finding_not_a_failure(monkeypatch, tmp_path):
    monkeypatch.setattr(context, "SLOW_FLOOR", 0.1)
    monkeypatch.setattr(context, "SLOW_FACTOR", 1.0)  # in the interpreter the reference itself takes ~0.05 s
    result = lse_fuzz.check(sleepy, budget=2, seed=0, reproducer_dir=tmp_path)
    assert result.passed
    assert result.slow and all(isinstance(call, SlowCall) and call.seconds >= 0.3 for call in result.slow)
    assert "slow (a finding, not a failure)" in result.summary() and "x reference.lse's" in result.summary()
    assert result.to_dict()["slow"][0]["ratio"] > 1


def test_a_time_limit_turns_a_slow_call_into_a_failure(tmp_path):
    result = lse_fuzz.check(sleepy, budget=5, seed=0, reproducer_dir=tmp_path, time_limit=0.1)
    assert result.check == "time_limit"
    assert "over the time limit of 0.1 s" in result.failure.message()


def test_the_second_deadline_is_generous_and_calibrated():
    assert hang_deadline(60.0, None) == 120.0  # no reference: the first deadline again
    assert hang_deadline(1.0, 0.5) == 1.0 + HANG_FACTOR * 0.5
    assert hang_deadline(10.0, 0.001) == 20.0  # never less than twice the first


def test_an_isolated_call_past_its_first_deadline_is_slow_not_a_hang(tmp_path):
    # It sleeps 1.5 s: it answers in the 2 s its worker is watched after the first deadline.
    with IsolatedImpl(f"{CANDIDATES / 'slow_but_correct.py'}:lse", call_timeout=1.0) as impl:
        result = lse_fuzz.check(impl, budget=3, seed=0, reproducer_dir=tmp_path)
        assert result.passed, result.summary()


def test_an_isolated_call_that_computes_past_its_first_deadline_gets_the_second(tmp_path):
    # 4.7 s of computing on its first call: past the first deadline (2.5 s) and the 2 s watch
    # after it, within the second (at least 5 s).
    computes = tmp_path / "computes.py"
    computes.write_text("import time\n\nimport torch\n\n_calls = 0\n\n\ndef lse(x):\n    global _calls\n"
                        "    _calls += 1\n    started = time.monotonic()\n"
                        "    while _calls == 1 and time.monotonic() - started < 4.7:\n        pass\n"
                        "    return torch.logsumexp(x.double(), dim=1).to(x.dtype)\n")
    with IsolatedImpl(f"{computes}:lse", call_timeout=2.5) as impl:
        result = lse_fuzz.check(impl, budget=3, seed=0, reproducer_dir=tmp_path)
        assert result.passed, result.summary()
        second, reference = impl.second_deadline
        assert second >= 5.0 and reference > 0


def test_an_isolated_call_that_computes_past_both_deadlines_is_a_hang(tmp_path):
    spins = tmp_path / "spins.py"
    spins.write_text("def lse(x):\n    while True:\n        pass\n")
    with IsolatedImpl(f"{spins}:lse", call_timeout=0.5) as impl:
        with pytest.raises(ImplLost) as lost:
            lse_fuzz.check(impl, budget=3, seed=0, reproducer_dir=tmp_path)
        assert impl.second_deadline is not None  # busy after the first deadline: given the second
    assert lost.value.outcome is Outcome.TIMEOUT
    assert "past the first deadline of 0.5 s and the second" in lost.value.detail
    # Why it was no hang at once: what its worker did in the window after the first deadline.
    assert re.search(r"the worker watched after the first deadline: [0-9.e+-]+ s of CPU in [0-9.]+ s, "
                     r"a thread running\)", lost.value.detail), lost.value.detail
    assert lost.value.reproducer is not None and lost.value.replay.endswith("--isolate")


def test_an_isolated_cpu_call_that_only_waits_is_a_hang_without_the_second_deadline(tmp_path):
    # It sleeps: its second deadline would be at least 2 x 3 s; idle in the 2 s after the first
    # deadline, it is a hang then (fuzz.isolation.worker.idle), the second deadline never set.
    with IsolatedImpl(f"{CANDIDATES / 'hang.py'}:lse", call_timeout=3.0) as impl:
        impl.start()
        started = time.monotonic()
        with pytest.raises(ImplLost) as lost:
            lse_fuzz.check(impl, budget=3, seed=0, reproducer_dir=tmp_path)
        waited = time.monotonic() - started
        assert impl.second_deadline is None
    assert lost.value.outcome is Outcome.TIMEOUT
    # The window after the first deadline is measured: 2.01 s on a loaded machine.
    assert re.search(r"past the first deadline of 3 s, and in the 2(\.\d+)? s after it the worker's processes "
                     "used 0 s of CPU", lost.value.detail)
    assert lost.value.detail.endswith("it waits, it does not compute: a hang")
    assert 5.0 <= waited < 6.0 + 3.0, waited  # measured: 5.0 s; the second deadline would give >= 6 s
    assert lost.value.reproducer is not None and lost.value.replay.endswith("--isolate")


def test_the_timing_loop_grows_the_count_then_keeps_the_best_round():
    rounds = []

    def timed(iters):
        rounds.append(iters)
        return iters * 0.01 + (0.05 if len(rounds) == 5 else 0.0)  # the last round is disturbed

    assert best_per_call(timed, min_seconds=0.2, repeats=3) == pytest.approx(0.01)
    assert rounds == [1, 16, 32, 32, 32]
