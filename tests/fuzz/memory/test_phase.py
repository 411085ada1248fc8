"""fuzz.memory.phase: the probes run under a tool in processes of their own, findings and notes.

A GPU's compute-sanitizer is stood in for by a script that runs the probe process as the tool does
and reports an error block in its format (data/ holds real ones) after the second probe starts:
what the phase makes of the tool's output, its time limit and the probes the contract admits are
tested here on the CPU. Where no compute-sanitizer is found the phase falls back to the CPU's own
checks, which are real: a kernel that reads past its row is caught, the reference is clean.
"""

from __future__ import annotations

import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fuzz.memory import phase, sanitizer

ROOT = Path(__file__).resolve().parents[3]
DOUBLES = ROOT / "tests" / "implementations" / "doubles"
BOTH = ("memory_bounds", "uninitialized_read")

FAKE = textwrap.dedent('''\
    import os, subprocess, sys, time
    args = sys.argv[1:]
    tool = args[args.index("--tool") + 1]
    command = args[args.index("--error-exitcode") + 2:]
    if os.environ.get("FAKE_SANITIZER_SLEEPS"):
        time.sleep(60)
    print("========= COMPUTE-SANITIZER", flush=True)
    # As the tool does: the probe's lines and the tool's error blocks as they come.
    done = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    found = 0
    for line in done.stdout:
        print(line, end="", flush=True)
        if line.startswith("lse-fuzz-probe 1 start") and os.environ.get("FAKE_SANITIZER_LIBRARY") == tool:
            found += 1  # a read inside a library's own kernel (PyTorch's reduction), as initcheck prints it
            print("========= Uninitialized __global__ memory read of size 8 bytes")
            print("=========     at void at::native::reduce_kernel<(int)512, (int)1>(T3)+0xf0c0")
            print("=========     by thread (31,0,0) in block (15,18,0)")
            print("=========     Address 0x7f6f3e21eff8")
            print("========= ", flush=True)
        if line.startswith("lse-fuzz-probe 1 start") and os.environ.get("FAKE_SANITIZER_FINDS") == tool:
            found += 7
            print("========= Invalid __global__ read of size 4 bytes")
            print("=========     at _k+0x10 in k.py:12")
            print("=========     by thread (3,0,0) in block (0,0,0)")
            print("=========     Access to 0x7f0000000014 is out of bounds")
            print("=========     Saved host backtrace up to driver entry point at kernel launch time")
            print("=========         Host Frame: launch [0x1fdc] in __triton_launcher.so")
            print("========= ", flush=True)
    done.wait()
    print(f"========= ERROR SUMMARY: {found} errors")
    sys.exit(86 if found else done.returncode)
''')


@pytest.fixture
def fake(tmp_path) -> str:
    path = tmp_path / "compute-sanitizer"
    path.write_text(f"#!{sys.executable}\n" + FAKE)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_tool_finding_fails_its_check_with_the_probe_kernel_and_a_replay(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_FINDS", "memcheck")
    report = phase.run("reference:lse", checks=BOTH, device="cpu", executable=fake)
    assert report.ran == "compute-sanitizer memcheck, initcheck" and report.probes == 8
    finding = report.finding
    assert finding is not None and finding.check == "memory_bounds" and finding.probe == "3 x 5"
    # The tools stop at the deciding finding: the errors are those printed by then, not the summary's 7.
    assert finding.kernel == "_k at k.py:12" and finding.errors == 1
    assert report.replay == (f"PYTORCH_NO_CUDA_MEMORY_CACHING=1 {fake} --tool memcheck "
                             "python -m fuzz.memory.probe reference:lse --dtype float32")
    assert "caching allocator off: Invalid __global__ read of size 4 bytes (memcheck)" in report.describe()


def test_the_tools_stop_once_a_finding_decides_the_verdict(fake, monkeypatch, tmp_path):
    # Each call takes a second and leaves a file: the probes after memcheck's finding (in the second
    # probe) never run, in either tool's process, and initcheck's stop is said.
    slow = tmp_path / "slow.py"
    slow.write_text(textwrap.dedent(f"""\
        import os, time, torch
        def lse(x):
            open(os.path.join({str(tmp_path)!r}, f"call-{{os.getpid()}}-{{time.monotonic_ns()}}"), "w").close()
            time.sleep(1.0)
            return torch.logsumexp(x.double(), 1).float()
        """))
    monkeypatch.setenv("FAKE_SANITIZER_FINDS", "memcheck")
    report = phase.run(str(slow), checks=BOTH, device="cpu", executable=fake)
    assert report.finding is not None and report.finding.tool == "memcheck" and report.finding.probe == "3 x 5"
    assert report.notes == ["initcheck stopped at memcheck's finding, which decides the verdict"]
    calls = [path.name.split("-")[1] for path in tmp_path.glob("call-*")]
    assert calls and max(calls.count(pid) for pid in set(calls)) <= 3  # of 8 probes (2 before the stop, 1 begun)
    monkeypatch.delenv("FAKE_SANITIZER_FINDS")
    for path in tmp_path.glob("call-*"):
        path.unlink()
    assert phase.run(str(slow), checks=("memory_bounds",), device="cpu", executable=fake).finding is None
    assert len(list(tmp_path.glob("call-*"))) == 8  # no finding: every probe runs


def test_initcheck_fails_uninitialized_read_and_a_clean_run_has_no_finding(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_FINDS", "initcheck")
    found = phase.run("reference:lse", checks=BOTH, device="cpu", executable=fake).finding
    assert found is not None and found.check == "uninitialized_read" and found.tool == "initcheck"
    monkeypatch.delenv("FAKE_SANITIZER_FINDS")
    clean = phase.run("reference:lse", checks=("memory_bounds",), device="cpu", executable=fake)
    assert clean.finding is None and clean.ran == "compute-sanitizer memcheck" and clean.notes == []
    assert ": clean (" in clean.describe()


def test_initchecks_reads_inside_a_librarys_kernel_are_a_note_not_a_finding(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_LIBRARY", "initcheck")
    report = phase.run("reference:lse", checks=BOTH, device="cpu", executable=fake)
    assert report.finding is None and ": clean (" in report.describe()
    assert any("initcheck reported 1 read of uninitialized memory inside a library's own kernel "
               "(at::native::reduce_kernel, probe '3 x 5'), not judged" in note
               for note in report.notes), report.notes
    probing = phase.start("reference:lse", checks=BOTH, device="cpu", executable=fake)
    deadline = time.monotonic() + 120
    while len(list(Path(probing.directory).glob("waiting.*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not probing.found()  # nor does it stop the fuzzing beside the phase
    assert probing.report().finding is None
    monkeypatch.setenv("FAKE_SANITIZER_FINDS", "initcheck")  # the implementation's own read after it still fails
    found = phase.run("reference:lse", checks=BOTH, device="cpu", executable=fake).finding
    assert found is not None and found.kernel == "_k at k.py:12" and found.check == "uninitialized_read"


def test_the_probes_stay_inside_the_declared_contract(fake):
    report = phase.run("reference:lse", checks=BOTH, device="cpu", executable=fake, max_n=300, contiguous=True)
    assert report.probes == 5 and report.finding is None  # no padded view, nothing wider than 300 columns


def test_a_tool_past_its_limit_is_stopped_and_said_so(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_SLEEPS", "1")
    report = phase.run("reference:lse", checks=("memory_bounds",), device="cpu", executable=fake, seconds=1.0)
    assert report.finding is None and report.notes[0] == "memcheck stopped at its limit of 1 s"
    assert report.seconds < 30


def test_without_compute_sanitizer_the_cpu_checks_judge_the_same_probes(monkeypatch):
    monkeypatch.setattr(sanitizer, "find", lambda: None)
    report = phase.run(str(DOUBLES / "reads_past.py"), checks=BOTH)
    assert report.ran.startswith("the CPU interpreter's memory checks")
    assert report.finding is not None and report.finding.check == "memory_bounds" and report.finding.probe == "3 x 5"
    assert "x_ptr[15]: 1 element past the end of a 15-element tensor" in report.finding.lines
    unwritten = phase.run(str(DOUBLES / "reads_unwritten.py"), checks=BOTH).finding
    assert unwritten is not None and unwritten.check == "uninitialized_read"
    assert phase.run("reference:lse", checks=BOTH).finding is None


def test_a_bug_of_one_element_size_is_found_by_that_sizes_probes(monkeypatch):
    # Two rows a program for 16-bit input, one otherwise: the float32 probes alone pass it.
    monkeypatch.setattr(sanitizer, "find", lambda: None)
    target = str(DOUBLES / "row_block_by_size.py")
    assert phase.run(target, checks=BOTH).finding is None
    report = phase.run(target, checks=BOTH, also=("float16", "float64"))
    assert report.finding is not None and report.finding.check == "memory_bounds", report.describe()
    assert report.finding.probe == "33 x 257, float16" and report.probes == 8 + 4
    assert "out_ptr[33]: 1 element past the end of a 33-element tensor" in report.finding.lines
    assert phase.run("reference:lse", checks=BOTH, also=("float16", "float64")).finding is None


def test_an_autotuned_kernel_is_probed_with_each_config(monkeypatch):
    # Its bug lives in the second config; unpinned, the interpreter would run the first only (and a
    # GPU would benchmark every config on every new key under the tools).
    monkeypatch.setattr(sanitizer, "find", lambda: None)
    report = phase.run(str(DOUBLES / "tuned_reads_past.py"), checks=BOTH)
    assert report.finding is not None and report.finding.check == "memory_bounds", report.describe()
    assert report.finding.probe == "1 x 1, config 2 of 2"  # config 1 of 2 ran first, clean


def test_what_the_phase_cannot_judge_is_said_not_failed():
    off = phase.run("reference:lse", checks=("agreement",))
    assert off.ran == "" and "leave memory_bounds and uninitialized_read out" in off.describe()
    convention = phase.run("reference:lse@ndim=3", checks=BOTH)
    assert convention.ran == "" and "call convention" in convention.notes[0]


def test_a_probe_that_raises_is_a_note(fake, tmp_path):
    raises = tmp_path / "raises.py"
    raises.write_text("def lse(x):\n    raise RuntimeError('no kernel for this shape')\n")
    report = phase.run(str(raises), checks=("memory_bounds",), device="cpu", executable=fake)
    assert report.finding is None
    assert report.notes == ["a probe raised under memcheck: RuntimeError: no kernel for this shape"]
    assert os.path.exists(raises)


def test_started_beside_other_work_the_report_waits_only_for_what_is_left(fake):
    probing = phase.start("reference:lse", checks=BOTH, device="cpu", executable=fake)
    deadline = time.monotonic() + 120
    while len(list(Path(probing.directory).glob("waiting.*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)  # the fuzzing would run here; the probe processes wait for its inputs once done
    assert all(process.poll() is None for process, _ in probing._running.values())
    assert not probing.found()  # a clean run's output so far shows no stray access
    report = probing.report()
    assert report.finding is None and report.probes == 8 and not probing.found()
    # Its own time counts from the start; the wait, only what was left once the inputs came.
    assert report.waited < 2.0 and report.waited + 0.5 < report.seconds
    assert "beside the fuzzing" in report.describe()
    assert probing.report() is report  # read once


def test_cancelled_probes_stop_at_once(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_SLEEPS", "1")
    probing = phase.start("reference:lse", checks=BOTH, device="cpu", executable=fake)
    processes = [process for process, _ in probing._running.values()]
    started = time.monotonic()
    probing.cancel()
    assert all(process.poll() is not None for process in processes) and time.monotonic() - started < 10


def _clean_but_on(tmp_path, shape: tuple[int, int]) -> str:
    """A target right everywhere (the reference) but on inputs of ``shape``, where it reads past its rows."""
    path = tmp_path / "past_on_one_shape.py"
    path.write_text(textwrap.dedent(f"""\
        import reference
        from fuzz.target import load_target

        _past = load_target({str(DOUBLES / "reads_past.py")!r})

        def lse(x):
            return (_past if tuple(x.shape) == {shape!r} else reference.lse)(x)
    """))
    return str(path)


def test_the_runs_own_inputs_are_replayed_after_the_probes_and_named(monkeypatch, tmp_path):
    monkeypatch.setattr(sanitizer, "find", lambda: None)
    target = _clean_but_on(tmp_path, (2, 1000))
    largest = {"description": "the largest input drawn, float32 (2, 1000) padded", "shape": [2, 1000],
               "dtype": "float32", "layout": {"kind": "padded", "pad": 3}}
    assert phase.run(target, checks=BOTH).finding is None  # the fixed probes miss it
    report = phase.run(target, checks=BOTH, inputs=[largest])
    assert report.probes == 9 and report.finding is not None and report.finding.check == "memory_bounds"
    assert report.finding.probe == largest["description"]
    assert "--inputs '[{" in report.replay and '"shape": [2, 1000]' in report.replay


def test_a_saved_counterexample_is_replayed_with_its_own_values_and_layout(monkeypatch, tmp_path):
    import torch

    from fuzz.checks import Plan
    from fuzz.layouts import Layout
    from fuzz.reproducer import save_reproducer
    from fuzz.strategies import Contract, LseInput

    monkeypatch.setattr(sanitizer, "find", lambda: None)
    values = torch.randn(2, 1000)
    example = LseInput(values=values, layout=Layout("transposed", pad=1), specs=(), seed=0, device=torch.device("cpu"))
    example.x = example.rebuild(values)
    saved = save_reproducer(tmp_path, example, Plan(None, 0, None), checks=("agreement",), contract=Contract(),
                            check="agreement", message="row 0 differs")
    counterexample = {"description": "the counterexample", "reproducer": str(saved)}
    report = phase.run(_clean_but_on(tmp_path, (2, 1000)), checks=BOTH, inputs=[counterexample])
    assert report.finding is not None and report.finding.probe == "the counterexample"


def test_views_past_2_31_elements_expose_32_bit_offsets(monkeypatch):
    monkeypatch.setattr(sanitizer, "find", lambda: None)
    int32 = f"{DOUBLES / 'int32_index.py'}:lse_int32_columns"
    assert phase.run(int32, checks=("memory_bounds",)).finding is None  # no fixed probe reaches 2**31
    report = phase.run(int32, checks=("memory_bounds",), huge=True)
    assert report.probes == 10 and report.finding is not None and report.finding.check == "memory_bounds"
    assert "huge column stride past 2**31" in report.finding.probe and report.replay.endswith("--huge")
    assert phase.run("reference:lse", checks=("memory_bounds",), huge=True).finding is None


def test_a_verdict_waits_at_most_the_given_seconds_after_the_fuzzing(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_SLEEPS", "1")
    probing = phase.start("reference:lse", checks=("memory_bounds",), device="cpu", executable=fake)
    report = probing.report([], most=1.0)
    assert report.waited < 10 and report.notes == [
        "memcheck stopped 1 s after the fuzzing ended (the most a verdict waits for it)"]


def test_a_finding_is_seen_while_the_tools_still_run(fake, monkeypatch):
    # What lets the fuzzing beside the phase stop early (fuzz.grading.memory_phase.MemoryStop); a clean
    # run's tools show none (test_started_beside_other_work_the_report_waits_only_for_what_is_left).
    monkeypatch.setenv("FAKE_SANITIZER_FINDS", "memcheck")
    probing = phase.start("reference:lse", checks=BOTH, device="cpu", executable=fake)
    deadline = time.monotonic() + 120
    while len(list(Path(probing.directory).glob("waiting.*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(process.poll() is None for process, _ in probing._running.values())  # waiting for the run's inputs
    assert probing.found()
    assert probing.report().finding is not None and probing.found()
    probing.cancel()


def test_the_cpus_checks_finding_is_seen_while_the_probes_still_run(monkeypatch):
    monkeypatch.setattr(sanitizer, "find", lambda: None)
    probing = phase.start(str(DOUBLES / "reads_past.py") + ":lse", checks=BOTH, device="cpu")
    deadline = time.monotonic() + 120
    while not list(Path(probing.directory).glob("waiting.*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert probing.found()
    assert probing.report().finding is not None
