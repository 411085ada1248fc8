"""Slow is a finding, a hang is a verdict, and a time limit turns slow into a failure."""

from __future__ import annotations

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
    with IsolatedImpl(f"{CANDIDATES / 'slow_but_correct.py'}:lse", call_timeout=1.0) as impl:
        result = lse_fuzz.check(impl, budget=3, seed=0, reproducer_dir=tmp_path)
        assert result.passed, result.summary()
        second, reference = impl.second_deadline
        assert second >= 2.0 and reference > 0


def test_an_isolated_call_past_both_deadlines_is_a_hang(tmp_path):
    with IsolatedImpl(f"{CANDIDATES / 'hang.py'}:lse", call_timeout=0.5) as impl:
        with pytest.raises(ImplLost) as lost:
            lse_fuzz.check(impl, budget=3, seed=0, reproducer_dir=tmp_path)
    assert lost.value.outcome is Outcome.TIMEOUT
    assert "past the first deadline of 0.5 s and the second" in lost.value.detail
    assert lost.value.reproducer is not None and lost.value.replay.endswith("--isolate")


def test_the_timing_loop_grows_the_count_then_keeps_the_best_round():
    rounds = []

    def timed(iters):
        rounds.append(iters)
        return iters * 0.01 + (0.05 if len(rounds) == 5 else 0.0)  # the last round is disturbed

    assert best_per_call(timed, min_seconds=0.2, repeats=3) == pytest.approx(0.01)
    assert rounds == [1, 16, 32, 32, 32]
