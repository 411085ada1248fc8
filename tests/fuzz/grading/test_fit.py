"""Fitting a CPU run's shapes to what the candidate costs in Triton's interpreter (fuzz.grading.fit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.grading import GradeOptions
from fuzz.grading.evaluate import evaluate
from fuzz.grading.fit import FLOOR, TRIGGER, fit_shapes
from fuzz.grading.reports import format_record, well_formed

CORPUS = Path(__file__).resolve().parents[2] / "implementations" / "correct"
CANDIDATES = CORPUS.parent / "candidates"
SLOW_PER_ELEMENT = f"{CORPUS / 'reduce_combine.py'}:lse"  # a Python combine function per element


def test_a_kernel_far_slower_per_element_than_the_reference_gets_shorter_rows():
    fit = fit_shapes(SLOW_PER_ELEMENT, GradeOptions().validated())
    assert fit is not None and FLOOR <= fit.max_elements < fit.default
    # The longest row it keeps costs what ordinary kernels cost, far below the trigger (unfitted: ~390x).
    assert fit.seconds <= TRIGGER * fit.reference_seconds
    assert f"at most {fit.max_elements} elements, not {fit.default}" in fit.describe()


@pytest.mark.parametrize("name", ["exp2_based", "two_pass", "autotuned"])
def test_an_ordinary_kernel_keeps_the_defaults(name):
    """Up to about 15x the reference on the longest row (autotuned, the slowest of the corpus)."""
    assert fit_shapes(f"{CORPUS / name}.py:lse", GradeOptions().validated()) is None


@pytest.mark.parametrize("options", [{"max_elements": 4096}, {"fit_shapes": False}],
                         ids=["explicit_cap", "turned_off"])
def test_an_explicit_cap_or_the_switch_turns_the_fit_off(options):
    assert fit_shapes(SLOW_PER_ELEMENT, GradeOptions(**options).validated()) is None


@pytest.mark.parametrize("name", ["segfault", "raises", "syntax_error"])
def test_a_probe_that_fails_leaves_the_defaults_for_the_run_to_report(name):
    assert fit_shapes(f"{CANDIDATES / name}.py:lse", GradeOptions().validated()) is None


def test_a_reference_that_cannot_run_here_leaves_the_defaults(monkeypatch):
    # A process compiling Triton for CUDA (a GPU host) refuses a CPU row: no fit, and no error
    # (it once made every Triton candidate of a CPU run on a GPU host an internal_error).
    from reference.errors import InvalidArgument

    def compiled_for_cuda(x):
        raise InvalidArgument("x.device='cpu', but Triton kernels are compiled for CUDA here")

    monkeypatch.setattr("fuzz.grading.fit.reference.lse", compiled_for_cuda)
    assert fit_shapes(SLOW_PER_ELEMENT, GradeOptions().validated()) is None


def test_the_record_and_the_report_say_the_shapes_were_fitted(tmp_path):
    record = evaluate(SLOW_PER_ELEMENT, GradeOptions(budget=3).validated(), reproducer_dir=tmp_path)
    assert record.verdict == "pass", record.reason
    fit = record.shape_fit
    assert fit is not None and fit["max_elements"] < fit["default"]
    assert record.options["fit_shapes"] is True and well_formed(record)
    assert "  shapes:   fitted to the interpreter: at most" in format_record(record)


def test_a_torch_wrapper_is_not_probed(tmp_path):
    record = evaluate(f"{CORPUS / 'torch_float32.py'}:lse", GradeOptions(budget=3).validated(), reproducer_dir=tmp_path)
    assert record.verdict == "pass" and record.shape_fit is None


# A Triton kernel whose import never finishes: each worker that loads it writes its pid first.
HANGS_ON_IMPORT_WITH_A_KERNEL = '''
import os
import time

import triton
import triton.language as tl

with open({evidence!r}, "a") as f:
    f.write(f"{{os.getpid()}}\\n")
time.sleep(3600)


@triton.jit
def _kernel(x_ptr):
    pass


def lse(x):
    return x
'''


def test_an_import_that_hangs_in_the_probe_is_the_verdict_and_not_loaded_a_second_time(tmp_path, monkeypatch):
    # The probe's worker is its first load: it hung there past the load deadline, so the run's own
    # worker would hang as long again. load_error once, after one deadline, not two.
    import fuzz.isolation.worker.proxy as proxy

    monkeypatch.setattr(proxy, "DEFAULT_LOAD_TIMEOUT", 2.0)  # the grading runs in this process
    evidence = tmp_path / "loads"
    candidate = tmp_path / "hangs.py"
    candidate.write_text(HANGS_ON_IMPORT_WITH_A_KERNEL.format(evidence=str(evidence)))
    record = evaluate(f"{candidate}:lse", GradeOptions(budget=5).validated(), reproducer_dir=tmp_path / "repro")
    assert record.verdict.value == "load_error"
    assert "no answer within 2 s while loading the target" in record.reason
    assert len(evidence.read_text().split()) == 1  # one worker loaded it


class _Timings:
    """The fit's clocks, made up: the reference takes the next of ``reference`` (its last one
    again once they run out); the candidate costs ``per_column`` seconds a column, and the row
    lengths it was timed on are kept."""

    def __init__(self, monkeypatch, reference: list[float], per_column: float) -> None:
        from fuzz.grading import fit

        self.reference, self.per_column, self.timed = list(reference), per_column, []
        monkeypatch.setattr(fit, "_best", lambda call, x, repeats: self._reference())
        monkeypatch.setattr(fit, "_slowest_config", lambda impl, x, repeats: self._candidate(x.shape[1]))

    def _reference(self) -> float:
        return self.reference.pop(0) if len(self.reference) > 1 else self.reference[0]

    def _candidate(self, cols: int) -> float:
        self.timed.append(cols)
        return self.per_column * cols


CHEAP_TO_LOAD = f"{CANDIDATES / 'torch_float64.py'}:lse"  # the clocks are made up: any target that loads


def test_a_busy_moment_while_the_reference_is_timed_does_not_double_the_rows(monkeypatch):
    # The reference timed 60 % slow (as while the fork server imports), then as it is: the faster
    # counts. Had the slow one counted, this kernel (the corpus's per-element one: 8.3 x the
    # reference on rows of 4096) would have kept rows of 2048, not 1024.
    _Timings(monkeypatch, reference=[0.113, 0.069], per_column=8.3 * 0.069 / 4096)
    fit = fit_shapes(CHEAP_TO_LOAD, GradeOptions().validated())
    assert fit is not None and fit.reference_seconds == 0.069 and fit.max_elements == 1024


def test_rows_are_halved_until_they_cost_at_most_three_times_the_reference(monkeypatch):
    # 3.5 x on rows of 2048, 1.75 x on rows of 1024. A per-element kernel's whole run costs about 300
    # rows of the cap: with rows of 4 x, a default check of one took up to a minute on two cores.
    clocks = _Timings(monkeypatch, reference=[0.069], per_column=3.5 * 0.069 / 2048)
    assert fit_shapes(CHEAP_TO_LOAD, GradeOptions().validated()).max_elements == 1024
    assert 65536 not in clocks.timed  # far past the trigger (112 x): the long row is not run


def test_a_kernel_near_the_trigger_has_its_long_row_timed_before_it_is_fitted(monkeypatch):
    # 40 x by the probe's scaling, which a launch's fixed cost can inflate: the long row decides.
    clocks = _Timings(monkeypatch, reference=[0.069], per_column=40 * 0.069 / 65536)
    assert fit_shapes(CHEAP_TO_LOAD, GradeOptions().validated()) is not None
    assert 65536 in clocks.timed
