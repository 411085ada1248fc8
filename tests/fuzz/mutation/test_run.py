"""``lse-fuzz mutate`` end to end on a small kernel: statuses, the user's tests side by side, the
cache (a re-run reuses every verdict; an edit re-judges), the reports (Stryker JSON validated,
Markdown with the survivors' diffs, HTML in a real headless browser) and the command line.

One small run (five chosen mutants, small budgets) is shared by the module; the run of every
mutant, which shows every operator killed somewhere, is marked slow.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fuzz.checks import CHECKS
from fuzz.cli import main
from fuzz.mutation import discover, generate, mutation_options, run_mutation, validate_report
from fuzz.mutation.report import LOOK_HERE, headline, html_report, markdown_report, stryker_report, write_reports
from fuzz.outcomes import MutantStatus

HERE = Path(__file__).parent
TINY_DIR = HERE.parents[1] / "implementations" / "mutate"
# The value checks only, and no huge offsets: these tests are about the engine and need a survivor.
# The one they use, int64_promotion_removed, wraps its row offset past 2**31, so the views past
# 2**31 elements every run ends with (strategies.huge_examples) kill it, and memory_bounds (the
# CPU's bounds checker) at the wrapped read too.
VALUE_CHECKS = tuple(name for name in CHECKS if name not in ("memory_bounds", "uninitialized_read"))
OPTIONS = dict(options=mutation_options(contract="finite", dtypes=("float32", "float16", "bfloat16"),
                                        output_dtype="float32", max_elements=256, budget=10, checks=VALUE_CHECKS,
                                        huge_offsets=False),
               thorough_budget=15, jobs=2, timeout_floor=60)
CHOSEN = {
    "mask_off_by_one@tiny_lse.py:43:68": MutantStatus.KILLED,  # the tail tile reads one lane past the row
    "cdiv_floored@tiny_lse.py:56:13": MutantStatus.KILLED,  # the grid drops the last odd row (launcher)
    "int64_promotion_removed@tiny_lse.py:32:34": MutantStatus.SURVIVED,  # int32 wraps past 2**31: no such view here
    # The max starts in float16 and the loop makes it float32: Triton's compiler refuses the loop-carried
    # type change, and so does the interpreter with its front end (fuzz.interpreter.frontend).
    "accumulator_half@tiny_lse.py:33:53": MutantStatus.COMPILE_ERROR,
    "accumulator_half@tiny_lse.py:40:39": MutantStatus.COMPILE_ERROR,  # loop-carried float16 += float32
    "reduction_swapped@tiny_lse.py:45:35": MutantStatus.NO_COVERAGE,  # the WIDE branch never runs
}
TESTS = f"{sys.executable} check_tiny.py"


def test_statuses_your_tests_reports_and_the_cache(tmp_path):
    """One run shared by these checks (a run costs about a minute of interpreter time on a CPU)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("tiny_lse.py", "check_tiny.py"):
        shutil.copy(TINY_DIR / name, project / name)
    cache = tmp_path / "verdicts"
    report = run_mutation(str(project / "tiny_lse.py"), mutants=list(CHOSEN), tests=TESTS, tests_root=project,
                        cache=cache, **OPTIONS)
    _each_status_occurs_and_the_fuzzer_kills_the_real_bugs(report)
    _the_users_tests_are_judged_beside_the_fuzzer(report)
    _the_reports_validate_and_list_every_survivor_with_its_diff(report, tmp_path / "reports")
    _a_rerun_reuses_every_verdict(project, cache)
    _a_run_stopped_in_the_rerun_starts_there_again(project, cache)
    _editing_the_kernel_rejudges_its_mutants(project, cache)


def _each_status_occurs_and_the_fuzzer_kills_the_real_bugs(report):
    assert {r.name: r.status for r in report.results} == CHOSEN
    killed = {r.name: r.cell.check for r in report.results if r.status is MutantStatus.KILLED}
    assert all(killed.values())  # a named check killed each
    assert report.thorough == {"int64_promotion_removed@tiny_lse.py:32:34"}  # the survivor was run again, thoroughly
    assert report.gate[0].ok and report.gate[1].ok


def _the_users_tests_are_judged_beside_the_fuzzer(report):
    tests = {name: verdict.status for name, verdict in report.tests.items()}
    assert tests == {
        "mask_off_by_one@tiny_lse.py:43:68": MutantStatus.KILLED,
        "cdiv_floored@tiny_lse.py:56:13": MutantStatus.KILLED,
        "int64_promotion_removed@tiny_lse.py:32:34": MutantStatus.SURVIVED,
        "accumulator_half@tiny_lse.py:33:53": MutantStatus.SURVIVED,  # no compiler in the user's own run
        "accumulator_half@tiny_lse.py:40:39": MutantStatus.SURVIVED,  # its float32 inputs run fine
        "reduction_swapped@tiny_lse.py:45:35": MutantStatus.SURVIVED,
    }
    assert headline(report) == "your tests kill 2 of 6; lse-fuzz kills 2 of 6"


def _the_reports_validate_and_list_every_survivor_with_its_diff(report, out):
    data = stryker_report(report)
    validate_report(data)
    (entry,) = [m for f in data["files"].values() for m in f["mutants"] if m["id"].startswith("cdiv")]
    assert entry["mutatorName"] == "cdiv_floored" and entry["replacement"] == "rows // ROWS"
    assert "your-tests" in entry["killedBy"] and entry["status"] == "Killed"
    survivor = [m for f in data["files"].values() for m in f["mutants"] if m["status"] == "Survived"]
    assert survivor[0]["statusReason"].startswith("look here: a real gap, or an equivalent mutant")
    text = markdown_report(report)
    assert "### Survivors: look here" in text
    assert "+            row_ptr = x_ptr + row * stride_row" in text
    assert "reduction_swapped@tiny_lse.py:45:35" in text.split("### NoCoverage")[1]
    paths = write_reports(report, out)
    assert json.loads(paths["json"].read_text())["files"]
    assert "mutation-test-report-app" in paths["html"].read_text()


def _a_rerun_reuses_every_verdict(project, cache):
    again = run_mutation(str(project / "tiny_lse.py"), mutants=list(CHOSEN), tests=TESTS, tests_root=project,
                       cache=cache, **OPTIONS)
    assert (again.reused, again.judged) == (12, 0)  # 6 fuzz + 6 tests verdicts
    assert {r.name: r.status for r in again.results} == CHOSEN


def _a_run_stopped_in_the_rerun_starts_there_again(project, cache):
    """A run stopped while the survivors were graded again kept their first passes: the next run
    grades only the re-run, not the first pass again."""
    survivor = "int64_promotion_removed@tiny_lse.py:32:34"
    (verdict,) = [f for f in cache.rglob("*.json") if json.loads(f.read_text()).get("thorough")]
    verdict.unlink()  # as if the run had stopped before the survivor's re-run ended
    steps = []
    again = run_mutation(str(project / "tiny_lse.py"), mutants=[survivor], cache=cache,
                       progress=lambda step, done, total: steps.append((step, done, total)), **OPTIONS)
    assert [step for step in steps if step[0] != "gate"] == [("again", 1, 1)]  # no first pass
    assert (again.reused, again.judged) == (0, 1)
    assert again.thorough == {survivor} and again.results[0].status is MutantStatus.SURVIVED


def _editing_the_kernel_rejudges_its_mutants(project, cache):
    source = project / "tiny_lse.py"
    source.write_text(source.read_text().replace("# An all -inf row", "# A row of -inf only"))
    chosen = ["mask_off_by_one@tiny_lse.py:43:68", "reduction_swapped@tiny_lse.py:45:35"]
    edited = run_mutation(str(source), mutants=chosen, cache=cache, **OPTIONS)
    assert (edited.reused, edited.judged) == (0, 2)
    assert [r.status for r in edited.results] == [MutantStatus.KILLED, MutantStatus.NO_COVERAGE]


def test_a_timeout_is_confirmed_by_a_second_run_with_a_longer_limit(tmp_path, monkeypatch):
    """Stryker counts a Timeout as detected, so one that only load caused would be a kill the mutant
    never earned. Every run here is stopped after 1 s, which the surviving mutant's 20 examples of
    up to 1024 elements take longer than (10 of at most 256 took about 1 s, and in one CI run the
    first pass ended within it: the test failed); its second run gets 200 s: it survives, and is re-run thoroughly (also timed out
    at first, and run again). A kill that comes within the second stays a kill. With no more
    time the second time, a timeout stays a timeout."""
    import fuzz.mutation.judge as judge

    killed, survivor = "mask_off_by_one@tiny_lse.py:43:68", "int64_promotion_removed@tiny_lse.py:32:34"
    slow = replace(OPTIONS["options"], budget=20, max_elements=1024)
    options = {**OPTIONS, "options": slow, "thorough_budget": 30, "timeout_factor": 0, "timeout_floor": 1}
    monkeypatch.setattr(judge, "RETRY_FACTOR", 200.0)
    report = run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=[killed, survivor], cache=tmp_path / "v", **options)
    assert {r.name: r.status for r in report.results} == {killed: MutantStatus.KILLED,
                                                          survivor: MutantStatus.SURVIVED}
    assert survivor in report.retried and report.thorough == {survivor}
    assert "Survived (thorough) (run again after a timeout)" in markdown_report(report)
    monkeypatch.setattr(judge, "RETRY_FACTOR", 1.0)
    again = run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=[survivor], cache=None, **options)
    assert [r.status for r in again.results] == [MutantStatus.TIMEOUT] and again.retried == {survivor}


def test_lines_are_traced_only_when_a_mutant_survives(tmp_path, monkeypatch):
    """Tracing makes the interpreter 2-3 times slower, and only a survivor (or a timeout) can be a
    mutant whose edit never ran: with every mutant killed no run is traced; a survivor's run
    brings the traced run of the unmutated kernel, whose lines the cache keeps for the next run;
    a NoCoverage mutant is still named as such."""
    import fuzz.mutation.loading as loading

    traced, real = [], loading.coverage_target
    users = [m for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("fuzz.mutation")
             and getattr(m, "coverage_target", None) is real]

    def trace_with(fake) -> None:
        for module in users:
            monkeypatch.setattr(module, "coverage_target", fake)

    trace_with(lambda *args: traced.append(args) or real(*args))
    killed, survivor = "mask_off_by_one@tiny_lse.py:43:68", "int64_promotion_removed@tiny_lse.py:32:34"
    unreached = "reduction_swapped@tiny_lse.py:45:35"
    options = {**OPTIONS, "thorough_budget": 0}
    cache = tmp_path / "verdicts"
    report = run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=[killed], cache=cache, **options)
    assert [r.status for r in report.results] == [MutantStatus.KILLED] and traced == []
    report = run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=[survivor], cache=cache, **options)
    assert [r.status for r in report.results] == [MutantStatus.SURVIVED] and len(traced) == 1
    trace_with(lambda *args: pytest.fail("the kept lines were traced again"))
    steps = []
    report = run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=[unreached], cache=cache,
                          progress=lambda step, done, total: steps.append(step), **options)
    assert [r.status for r in report.results] == [MutantStatus.NO_COVERAGE]
    assert "mutants" not in steps  # known from the kept lines: never run


@pytest.mark.parametrize("device, jobs, shares", [("cpu", 16, 1), ("cuda", 2, 1), ("cuda", 8, 2), ("cuda", 14, 4), ("cuda", 16, 4),
                                                   ("cuda:1", 64, 4)])
def test_the_gate_is_shared_out_on_a_gpu_host_only(device, jobs, shares):
    from fuzz.grading.options import GradeOptions
    from fuzz.mutation.runner import gate_shares

    assert gate_shares(GradeOptions(device=device, jobs=jobs)) == shares


def test_the_gate_run_in_shares_is_the_gate_run_whole(tmp_path, monkeypatch):
    """On a GPU host the gate's run is split into shares of its one stream of examples (its cold
    compiles spread over the cores): the gate sees the mutants' examples, all of them, and its
    baseline (the mutants' time limit) is the seconds of the whole run."""
    import fuzz.mutation.runner as runner

    chosen = ["mask_off_by_one@tiny_lse.py:43:68", "int64_promotion_removed@tiny_lse.py:32:34"]
    options = {**OPTIONS, "thorough_budget": 0}
    whole = run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=chosen, cache=None, **options)
    monkeypatch.setattr(runner, "gate_shares", lambda options: 3)
    gates = []
    shared = run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=chosen, cache=None, **options,
                          progress=lambda step, done, total: gates.append(total) if step == "gate" else None)
    assert gates and set(gates) == {4}  # three shares and the kernel + 1
    assert [r.status for r in shared.results] == [r.status for r in whole.results]
    assert shared.gate[0].cell.record.examples == whole.gate[0].cell.record.examples == OPTIONS["options"].budget
    assert shared.baseline_seconds >= 0.5 * whole.baseline_seconds


@pytest.mark.parametrize("args, message", [
    (["mutate", "no/such.py"], "no such file"),
    (["mutate", str(TINY_DIR / "check_tiny.py")], "no function 'lse' is defined"),
    (["mutate", str(TINY_DIR / "tiny_lse.py"), "--operators", "nope"], "no such operator"),
    (["mutate", str(TINY_DIR / "tiny_lse.py"), "--show", "nope"], "is not a mutant"),
    (["mutate", str(TINY_DIR / "tiny_lse.py"), "--tests", "exit 3", "--tests-root", str(TINY_DIR), "--no-cache"],
     "exited with status 3 on the unmutated kernel"),
    (["mutate", str(TINY_DIR / "tiny_lse.py"), "--tests", "true", "--no-cache"],
     "does not contain the kernel file"),
], ids=["missing-file", "no-launcher", "bad-operator", "bad-mutant", "failing-tests", "tests-root"])
def test_cli_bad_input_is_one_line_and_exit_2(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if "--tests" in args:
        monkeypatch.setattr("fuzz.mutation.runner.Gate", _tests_gate_only)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_kernel_the_cpu_cannot_run_stops_at_the_gate_with_one_line_naming_the_construct(capsys, tmp_path,
                                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    kernel = HERE.parents[1] / "implementations" / "candidates" / "inline_asm.py"
    assert main(["mutate", str(kernel), "--budget", "10", "--no-cache", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{kernel}:lse: its mutants cannot be judged on the CPU: the kernel uses tl.inline_asm_elementwise" in err
    assert "run with --device cuda" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _tests_gate_only(run, timeout_factor, timeout_floor):
    """The --tests part of the gate alone (the fuzzer's part is shown above): what a bad command hits."""
    from fuzz.mutation import runner

    result = next(run.pool.run([run.tests_job("gate-tests", {}, "", 60.0)]))
    verdict = runner.TestsVerdict.of(runner.tests_record(result))
    raise runner.InvalidArgument(f"--tests={run.tests!r} exited with status {verdict.exit} on the unmutated kernel")


def test_cli_lists_and_shows_mutants(capsys):
    assert main(["mutate", str(TINY_DIR / "tiny_lse.py"), "--list"]) == 0
    out = capsys.readouterr().out
    assert "cdiv_floored@tiny_lse.py:56:13" in out and "31 mutants" in out
    assert main(["mutate", str(TINY_DIR / "tiny_lse.py"), "--show", "cdiv_floored@tiny_lse.py:56:13"]) == 0
    assert "+    grid = (rows // ROWS,)" in capsys.readouterr().out


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _location(mutant) -> dict:
    _, line, column, end_line, end_column = mutant.location()
    return {"start": {"line": line, "column": column}, "end": {"line": end_line, "column": end_column}}


@pytest.mark.skipif(CHROMIUM is None, reason="no headless browser installed (Debian: apt-get install chromium); "
                                             "the HTML report's rendering is checked where one is")
def test_the_html_report_renders_counts_and_opens_a_mutants_diff(tmp_path):
    mutants = generate(discover(str(TINY_DIR / "tiny_lse.py")))
    statuses = {m.name: CHOSEN.get(m.name, MutantStatus.KILLED) for m in mutants}
    data = {"schemaVersion": "2", "thresholds": {"high": 100, "low": 90}, "files": {"tiny_lse.py": {
        "language": "python", "source": mutants[0].sources[mutants[0].file], "mutants": [
            {"id": m.name, "mutatorName": m.operator, "replacement": m.replacement, "status": statuses[m.name].value,
             "statusReason": LOOK_HERE if statuses[m.name] is MutantStatus.SURVIVED else "",
             "location": _location(m)} for m in mutants]}}}
    validate_report(data)
    page = html_report(data).replace("</body>", f"<script>{(HERE / 'browser_probe.js').read_text()}</script></body>")
    probe = tmp_path / "probe.html"
    probe.write_text(page)
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    found = json.loads(dom.split('<pre id="probe">')[1].split("</pre>")[0])
    assert found["rendered"]
    # All files: killed, survived, timeout, no coverage, ignored, runtime errors, compile errors; total
    assert found["cells"][5:12] == [str(len(mutants) - 4), "1", "0", "1", "0", "0", "2"]
    assert found["cells"][14] == str(len(mutants))
    assert found["mode"] == "half" and found["selected"] == "int64_promotion_removed@tiny_lse.py:32:34"
    assert found["diffRows"] == 2  # the original line and the mutated one
    assert LOOK_HERE in found["drawer"]


@pytest.mark.slow
def test_every_operator_is_killed_somewhere(tmp_path):
    # Every check and the huge offsets: int64_promotion_removed, the survivor of OPTIONS, is killed
    # only past 2**31 elements.
    options = replace(OPTIONS["options"], budget=20, checks=None, huge_offsets=True)
    full = run_mutation(str(TINY_DIR / "tiny_lse.py"), cache=None,
                        **{**OPTIONS, "options": options, "thorough_budget": 40})
    killed = {r.mutant.operator for r in full.results if r.status is MutantStatus.KILLED}
    operators = {r.mutant.operator for r in full.results}
    assert operators == killed


def test_a_verdict_s_key_changes_with_the_fuzzer_s_own_source(monkeypatch):
    # A checkout between releases keeps its version number while its checks change: a verdict the
    # old checks decided must not be reused (a cache kept between CI runs would hide a regression).
    from fuzz.mutation import cache

    assert len(cache.tool_digest()) == 64 and cache.tool_digest() == cache.tool_digest()
    before = cache.verdict_key("verdict", "mutant", "kernel", "options")
    monkeypatch.setattr(cache, "tool_digest", lambda: "another source")
    assert cache.verdict_key("verdict", "mutant", "kernel", "options") != before


def test_on_a_gpu_a_mutant_probes_memory_beside_its_run_only_where_its_documented_check_is_a_memory_check():
    """The GPU's memory phase is two processes under compute-sanitizer per run. A mutant killed by a
    value check is killed whatever the phase would name, so only a mutant documented as a memory
    check's starts the phase beside its run (to be named as the CPU names it); the others probe
    only after a pass or a kernel fault. The CPU has no phase: its options stay as given."""
    from fuzz.grading.options import GradeOptions, MemoryPhase
    from fuzz.mutation.bundled import catalog
    from fuzz.memory import MEMORY_CHECKS
    from fuzz.mutation.judge import mutant_options

    mutants = catalog()
    gpu, cpu = GradeOptions(device="cuda"), GradeOptions(device="cpu")
    phases = {name: mutant_options(gpu, mutant).memory for name, mutant in mutants.items()}
    assert phases["store_past_output"] is phases["skipped_empty_partial"] is MemoryPhase.BESIDE
    assert phases["masked_lanes_zero"] is phases["no_max_added"] is MemoryPhase.AFTER_PASS
    assert {name for name, phase in phases.items() if phase is MemoryPhase.BESIDE} == \
        {name for name, mutant in mutants.items() if mutant.expected_check in MEMORY_CHECKS}
    # Beside the run, only the tool of the documented check (the other after a pass, as for any mutant).
    tools = {name: mutant_options(gpu, mutant).memory_checks for name, mutant in mutants.items()}
    assert tools["store_past_output"] == ("memory_bounds",) and tools["skipped_empty_partial"] == ("uninitialized_read",)
    assert tools["no_max_added"] is None
    assert all(mutant_options(cpu, mutant) is cpu for mutant in mutants.values())


def test_only_the_first_share_of_the_gate_probes_memory_and_the_broken_kernel_after_a_pass_only(tmp_path,
                                                                                               monkeypatch):
    """On a GPU host the gate's run of the unmutated kernel is split into shares: one memory phase
    is the kernel's, not one per share; the broken kernel must fail a value check, after which no
    phase runs."""
    import fuzz.mutation.runner as runner
    from fuzz.grading.options import MemoryPhase

    asked = {}
    real = runner.Run.grade_job

    def grade_job(self, key, target, options):
        asked[key] = options.memory
        return real(self, key, target, options)

    monkeypatch.setattr(runner.Run, "grade_job", grade_job)
    monkeypatch.setattr(runner, "gate_shares", lambda options: 3)
    run_mutation(str(TINY_DIR / "tiny_lse.py"), mutants=["mask_off_by_one@tiny_lse.py:43:68"], cache=None,
                 **{**OPTIONS, "thorough_budget": 0})
    assert {key: phase for key, phase in asked.items() if key.startswith("gate")} == {
        "gate-correct-0": MemoryPhase.BESIDE, "gate-correct-1": MemoryPhase.OFF, "gate-correct-2": MemoryPhase.OFF,
        "gate-broken": MemoryPhase.AFTER_PASS}
