"""fuzz.grading.memory_phase: the fuzzing beside the GPU's memory phase stops once a tool found a
stray access, the parts' own stop kept; a finding made already replays nothing.

The phase's processes are stood in for by an object that answers ``found()`` as a tool's output
would; the fuzzing is real (the CPU's), so the stop is seen ending a real run."""

from __future__ import annotations

import importlib
import time
from dataclasses import replace

import doubles
from run_stops import FixedStop

import lse_fuzz
import torch
from fuzz.contract import DTYPES
from fuzz.grading import GradeOptions
from fuzz.grading import memory_phase as memory_phase_module
from fuzz.grading.candidates import Candidate
from fuzz.grading.memory_phase import MemoryStop, memory_phase, other_sizes, stop_for, watching
from fuzz.grading.parts import MEMORY_FOUND, PartSignal
from fuzz.memory import MemoryReport
from fuzz.memory.sanitizer import Finding
from fuzz.outcomes import Verdict

evaluate = importlib.import_module("fuzz.grading.evaluate")  # the module (the package exports the function)

FINDING = Finding("memory_bounds", "memcheck", "Invalid __global__ write of size 4 bytes",
                  ["at _k+0x10 in k.py:12"], probe="3 x 5", errors=1)


class Probes:
    """A stand-in of :class:`fuzz.memory.Probing`: finds its stray access at the ``after``-th look."""

    def __init__(self, after: int | None) -> None:
        self.after, self.looks, self.handed = after, 0, None

    def found(self) -> bool:
        self.looks += 1
        return self.after is not None and self.looks >= self.after

    def report(self, inputs=(), most=None) -> MemoryReport:
        self.handed = list(inputs)
        return MemoryReport("compute-sanitizer memcheck, initcheck", 9.0, 8, FINDING if self.after else None, [],
                            "REPLAY")


def test_the_fuzzing_beside_the_phase_stops_once_a_tool_found_a_stray_access(tmp_path):
    # A kernel that stores past its output with the right values ran its whole budget before its
    # verdict, where the tool had found the store long before.
    found = Probes(after=5)
    result = lse_fuzz.check(doubles.lse_float64, budget=40, seed=0, device="cpu", reproducer_dir=tmp_path,
                            stop=MemoryStop(found, every=0.0))
    assert result.passed and 0 < result.examples < 40
    assert "stopped: the memory phase beside the run found a stray access (its verdict follows)" in result.notes
    clean = Probes(after=None)
    result = lse_fuzz.check(doubles.lse_float64, budget=40, seed=0, device="cpu", reproducer_dir=tmp_path,
                            stop=MemoryStop(clean, every=0.0))
    assert result.examples == 40 and clean.looks >= 40 and not any(n.startswith("stopped") for n in result.notes)


def test_the_tools_output_is_read_at_most_every_so_often_and_the_parts_stop_is_kept():
    probes = Probes(after=None)
    stop = MemoryStop(probes, every=3600.0)
    assert not stop.others_failed() and not stop.others_failed() and probes.looks == 1
    parts = FixedStop(others_failed=False)
    stop = MemoryStop(Probes(after=None), parts, every=0.0)
    stop.failed()
    assert parts.marked == 1 and not stop.others_failed() and stop.why == ""
    parts.others = True
    assert stop.others_failed() and stop.why == ""  # the parts' own: "another part of the run failed first"


def test_a_run_beside_the_phase_is_stopped_by_it_and_by_its_parts(tmp_path, monkeypatch):
    options = GradeOptions(device="cuda")
    assert stop_for(options, None) is None
    with_parts = replace(options, stop_dir=str(tmp_path))
    assert isinstance(stop_for(with_parts, None), PartSignal)
    probes = Probes(after=None)
    both = stop_for(with_parts, probes)
    assert isinstance(both, MemoryStop) and isinstance(both.parts, PartSignal) and both.probes is probes
    seen = {}
    monkeypatch.setattr(evaluate, "check", lambda impl, **options: seen.update(options))
    evaluate._fuzz(None, Candidate("k.py", "", "k.py:lse"), options, None, tmp_path, probes)
    assert isinstance(seen["stop"], MemoryStop) and seen["stop"].probes is probes and seen["stop"].parts is None
    evaluate._fuzz(None, Candidate("k.py", "", "k.py:lse"), options, None, tmp_path)
    assert seen["stop"] is None


def test_a_finding_made_already_replays_none_of_the_runs_inputs():
    candidate, options = Candidate("k.py", "", "k.py:lse"), GradeOptions(device="cuda")
    record = evaluate.base_record(candidate, options)
    record.result = {"largest": {"description": "64 x 4097 float32", "shape": [64, 4097], "dtype": "float32",
                                 "layout": "contiguous"}}
    found = Probes(after=1)
    assert memory_phase(candidate, options, record, Verdict.PASS, found) is Verdict.FAIL
    assert found.handed == [] and record.check == "memory_bounds"
    clean = Probes(after=None)
    again = evaluate.base_record(candidate, options)
    again.result = dict(record.result)
    assert memory_phase(candidate, options, again, Verdict.PASS, clean) is Verdict.PASS
    assert [entry["shape"] for entry in clean.handed] == [[64, 4097]]
    assert memory_phase_module.memory.WAIT_SECONDS  # the verdict's wait beside the fuzzing is unchanged


def test_parts_side_by_side_are_stopped_by_a_finding_beside_them_and_say_so(tmp_path):
    # A GPU's check runs its parts in processes of their own: a thread here watches the tools and
    # stops them all through the directory their stops share.
    part = PartSignal(tmp_path)
    with watching(None, str(tmp_path)):
        time.sleep(0.1)
    assert not part.others_failed()
    probes = Probes(after=3)
    with watching(probes, str(tmp_path), every=0.01):
        deadline = time.monotonic() + 30
        while not part.others_failed() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert part.others_failed() and part.why == MEMORY_FOUND and probes.looks == 3  # then it stopped looking
    result = lse_fuzz.check(doubles.lse_float64, budget=20, seed=0, device="cpu", reproducer_dir=tmp_path, stop=part)
    assert result.examples == 0 and f"stopped: {MEMORY_FOUND}" in result.notes
    other = tmp_path / "other"
    other.mkdir()
    (other / "failed-another-process").touch()
    assert PartSignal(other).others_failed() and PartSignal(other).why == ""


INITCHECK = Finding("uninitialized_read", "initcheck", "Uninitialized __global__ memory read of size 4 bytes",
                    ["at _k+0x20 in k.py:14"], probe="3 x 8192", errors=1)


class Tool(Probes):
    """A stand-in of one tool's :class:`fuzz.memory.Probing`, finding ``finding`` (or nothing)."""

    def __init__(self, tool: str, finding: Finding | None) -> None:
        super().__init__(after=None)
        self.tool, self.finding = tool, finding

    def report(self, inputs=(), most=None) -> MemoryReport:
        self.handed = list(inputs)
        return MemoryReport(f"compute-sanitizer {self.tool}", 4.0, 8, self.finding, [f"{self.tool} ran"], "REPLAY",
                            waited=1.0)

    def cancel(self) -> None:
        pass


def test_a_phase_started_for_one_check_beside_the_run_starts_the_other_tool_only_after_a_pass(monkeypatch):
    # A mutation analysis starts only the tool of a memory mutant's documented check beside its run
    # (fuzz.mutation.judge.mutant_options): the other starts as for any mutant, after a pass.
    candidate = Candidate("k.py", "", "k.py:lse")
    options = GradeOptions(device="cuda", memory_checks=("memory_bounds",))
    started = []
    monkeypatch.setattr(memory_phase_module.memory, "start",
                        lambda target, checks, **kw: started.append(checks) or Tool(checks[0], None))
    with memory_phase_module.probing(candidate.target, options):
        assert started == [("memory_bounds",)]
    later = Tool("initcheck", INITCHECK)
    monkeypatch.setattr(memory_phase_module, "_started", lambda target, opts, only=None: started.append(only) or later)
    record = evaluate.base_record(candidate, options)
    assert memory_phase(candidate, options, record, Verdict.PASS, Tool("memcheck", None)) is Verdict.FAIL
    assert started[-1] == ("uninitialized_read",) and record.check == "uninitialized_read"
    assert record.memory["ran"] == "compute-sanitizer memcheck, initcheck" and record.memory["seconds"] == 8.0
    assert record.memory["notes"] == ["memcheck ran", "initcheck ran"] and record.memory["waited"] == 2.0
    # A value check's failure kills the mutant whatever the other tool would name: it never starts.
    failed = evaluate.base_record(candidate, options)
    failed.check, failed.reason = "matches_reference", "check 'matches_reference' failed"
    count = len(started)
    assert memory_phase(candidate, options, failed, Verdict.FAIL, Tool("memcheck", None)) is Verdict.FAIL
    assert len(started) == count and failed.check == "matches_reference" and "initcheck" not in failed.memory["ran"]
    # Its own tool's finding needs nothing more.
    found = evaluate.base_record(candidate, options)
    assert memory_phase(candidate, options, found, Verdict.PASS, Tool("memcheck", FINDING)) is Verdict.FAIL
    assert len(started) == count and found.check == "memory_bounds"
    # Without memory_checks both tools started beside the run: nothing is started after it.
    whole = GradeOptions(device="cuda")
    clean = evaluate.base_record(candidate, whole)
    assert memory_phase(candidate, whole, clean, Verdict.PASS, Tool("memcheck, initcheck", None)) is Verdict.PASS
    assert len(started) == count


def test_two_runs_of_the_phase_read_as_one():
    from fuzz.memory import merged

    both = merged(MemoryReport("compute-sanitizer memcheck", 3.0, 8, None, ["a"], "", 1.0),
                  MemoryReport("compute-sanitizer initcheck", 4.0, 9, INITCHECK, ["b"], "R", 4.0))
    assert (both.ran, both.seconds, both.probes, both.finding, both.notes, both.replay, both.waited) == (
        "compute-sanitizer memcheck, initcheck", 7.0, 9, INITCHECK, ["a", "b"], "R", 5.0)
    cpu = "the CPU interpreter's memory checks (no compute-sanitizer found)"
    assert merged(MemoryReport(cpu), MemoryReport(cpu)).ran == cpu  # no tool found: the same checks twice
    assert merged(MemoryReport("", notes=["left out"]), MemoryReport(cpu)).ran == cpu


def test_memory_checks_travel_to_the_driver_and_only_a_restricted_phase_shows_in_reports_and_keys():
    plain, one = GradeOptions(device="cuda"), GradeOptions(device="cuda", memory_checks=("memory_bounds",))
    assert GradeOptions.from_wire(one.to_wire()) == one and GradeOptions.from_wire(plain.to_wire()) == plain
    assert "memory_checks" not in plain.public() and one.public()["memory_checks"] == ["memory_bounds"]
    assert one.key() != plain.key()


def test_the_other_sizes_are_the_first_dtype_of_each():
    assert other_sizes(DTYPES) == ("float16", "float64")  # bfloat16's size is float16's
    assert other_sizes((torch.bfloat16, torch.float32, torch.float16)) == ("float32",)
    assert other_sizes((torch.float32,)) == ()
