"""``lse-fuzz grade``: a verdict per candidate (every planted candidate gets the right one), static
findings as flags, reports that survive interruption and resume, determinism for a seed, and
exit code 2 for bad paths and options (a bad candidate in a batch is a load_error verdict)."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz.cli import main
from fuzz.grading import Candidate, GradeOptions, discover, schedule
from fuzz.grading.static_scan import FLAGS, scan_source

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = Path(__file__).resolve().parents[2] / "implementations" / "hostile"
CANDIDATES = ROOT / "tests" / "implementations" / "candidates"
BATCH_OPTIONS = ["--budget", "20", "--max-elements", "4096", "--seed", "0", "--call-timeout", "3",
                 "--memory-limit", "4", "-j", "2", "-q"]


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit:
            code = exit.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="session")
def batch(tmp_path_factory):
    """Every planted candidate in EXPECTED graded once per test session (shared by xdist workers)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    out = shared / "graded-candidates"
    with open(shared / "graded-candidates.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "done.json").exists():
            markdown = shared / "graded-candidates.md"
            files = [str(CANDIDATES / f"{name}.py") for name in sorted(EXPECTED)]
            code, stdout, stderr = run_cli("grade", *files, *BATCH_OPTIONS, "--out-dir", str(out),
                                           "--overwrite", "--markdown", str(markdown))
            (out / "done.json").write_text(json.dumps({"code": code, "stdout": stdout, "stderr": stderr,
                                                       "markdown": markdown.read_text()}))
    done = json.loads((out / "done.json").read_text())
    records = {Path(r["candidate"]).stem: r for r in map(json.loads, (out / "grade.jsonl").read_text().splitlines())}
    return {"out": out, "records": records, **done}


# candidate -> (verdict, the failing check (None: any), flags it must have, flags it must not have)
EXPECTED = {
    "aborts": ("crash", None, {"process_exit"}, set()),
    "aliases_input": ("fail", "output_contract", set(), set()),
    "bfloat16_sum_in_bfloat16": ("fail", "agreement", set(), {"no_triton_kernel", "library_lse"}),  # was an error
    "buggy_no_max": ("fail", "agreement", set(), {"no_triton_kernel", "library_lse"}),
    "caches_by_object": ("fail", "fresh_values", {"memoization"}, set()),
    "caches_by_shape": ("fail", None, {"memoization"}, set()),
    "decoy_kernel": ("pass", None, {"library_lse", "kernel_not_launched"}, {"no_triton_kernel"}),
    "env_probe": ("pass", None, {"prints", "environment"}, set()),
    "exits_on_import": ("load_error", None, {"process_exit"}, set()),
    "hang": ("timeout", None, {"no_triton_kernel"}, set()),
    "import_error": ("load_error", None, set(), set()),
    "inline_asm": ("unsupported", None, set(), {"no_triton_kernel"}),  # no verdict on the CPU, named
    "memory_hog": ("crash", None, set(), set()),
    "missing_function": ("load_error", None, set(), set()),
    "mutates_input": ("fail", "input_unchanged", set(), set()),
    "noisy": ("pass", None, {"prints", "library_lse", "no_triton_kernel"}, set()),
    "os_exit": ("crash", None, {"process_exit"}, set()),
    "prints_past_the_file_limit": ("crash", None, set(), set()),  # a resource limit, not its OSError
    "exceeds_its_cpu_time_limit": ("crash", None, set(), set()),
    "raises": ("error", None, set(), set()),
    "segfault": ("crash", None, {"native_code"}, set()),
    "skips_last_row": ("fail", None, set(), set()),
    "slow_but_correct": ("pass", None, {"no_triton_kernel", "library_lse"}, set()),
    "sys_exit": ("crash", None, {"process_exit"}, set()),
    "syntax_error": ("load_error", None, set(), set()),
    "torch_float64": ("pass", None, {"no_triton_kernel", "library_lse"}, {"prints"}),
    "triton_two_pass": ("pass", None, set(), {"no_triton_kernel", "library_lse", "host_math", "prints"}),
    "wrong_device": ("fail", "output_contract", set(), set()),
    "wrong_dtype": ("fail", "output_contract", set(), set()),
    "wrong_shape": ("fail", "output_contract", set(), set()),
    "wrong_signature": ("load_error", None, set(), set()),
    "wrong_type": ("fail", "output_contract", set(), set()),
    "writes_padding": ("fail", "input_unchanged", set(), set()),
}

# Graded with options of their own, where the batch's would leave the verdict to the machine's load.
GRADED_ELSEWHERE = {
    # Its 10 s call is past --call-timeout 3 and, by a hair, its second deadline (100 x reference.lse
    # on a 1 x 1 input: 3-7 s of the interpreter, more under load): a timeout here, a pass there.
    "slow_fifth_call": "test_slow_once.py",
    # Its import never ends: graded there with a short load deadline, not the 60 s one here.
    "hangs_on_import": "test_evaluate.py",
}

REASONS = {
    "aborts": "SIGABRT",
    "hang": "past the first deadline of 3 s",
    "memory_hog": "out of memory: the worker exceeded the address-space limit of 22 GiB",
    "prints_past_the_file_limit": "ran into a resource limit: the worker exceeded the output-file-size limit of 256 MiB",
    "exceeds_its_cpu_time_limit": "ran into a resource limit: the worker exceeded the CPU-time limit",
    "segfault": "SIGSEGV",
    "os_exit": "exited with code 7",
    "sys_exit": "sys.exit(3)",
    "raises": "RuntimeError",
    "inline_asm": "UNSUPPORTED on the CPU: the kernel uses tl.inline_asm_elementwise",
    "syntax_error": "line 4: SyntaxError",
    "import_error": "ModuleNotFoundError",
    "missing_function": "has no attribute 'lse'",
    "wrong_signature": "cannot be called as lse(x)",
    "exits_on_import": "sys.exit(",
}


def test_every_planted_candidate_is_in_the_table():
    assert {p.stem for p in CANDIDATES.glob("*.py")} == set(EXPECTED) | set(GRADED_ELSEWHERE)
    assert not set(EXPECTED) & set(GRADED_ELSEWHERE)
    assert all((Path(__file__).parent / module).is_file() for module in GRADED_ELSEWHERE.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_candidate_gets_its_verdict(batch, name):
    record = batch["records"][name]
    verdict, check, required, forbidden = EXPECTED[name]
    assert record["verdict"] == verdict, record["reason"]
    if check is not None:
        assert record["check"] == check, record["reason"]
    flags = {f["flag"] for f in record["flags"]}
    assert required <= flags and not forbidden & flags, flags
    assert REASONS.get(name, "") in record["reason"]
    if verdict in ("fail", "error", "crash", "timeout", "unsupported"):
        assert record["replay"] and Path(record["reproducer"]).is_file()
        assert record["counterexample"]["description"]


def test_the_batch_exits_1_and_prints_a_summary_table(batch):
    assert batch["code"] == 1
    assert "lse-fuzz grade" in batch["stdout"] and "triton_two_pass" in batch["stdout"]
    counts = "33 candidates: 6 pass, 12 fail, 1 error, 7 crash, 1 timeout, 5 load_error, 1 unsupported"
    assert counts in batch["stdout"].replace("\n", " ")
    assert "Traceback" not in batch["stderr"]


def test_a_candidate_the_cpu_cannot_run_is_no_pass_and_no_failure_of_the_batch(tmp_path):
    files = [str(CANDIDATES / "inline_asm.py"), str(CANDIDATES / "torch_float64.py")]
    code, stdout, _ = run_cli("grade", *files, *BATCH_OPTIONS, "--out-dir", str(tmp_path / "out"))
    assert code == 4, stdout  # ExitCode.UNSUPPORTED: the others passed
    assert "2 candidates: 1 pass, 1 unsupported" in stdout.replace("\n", " ")
    record = records_of(tmp_path / "out")["inline_asm"]
    assert record["result"]["failure"]["construct"] == "tl.inline_asm_elementwise"
    assert record["replay"].endswith(" --device cuda") and record["exception"] is None


def test_the_reports_agree_and_leave_no_temporary_files(batch):
    out = batch["out"]
    lines = (out / "grade.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["candidate"] for r in records] == sorted(r["candidate"] for r in records)
    with open(out / "grade.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["candidate"], r["verdict"], r["check"]) for r in rows] == \
        [(r["candidate"], r["verdict"], r["check"] or "") for r in records]
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert all(r["key"] == records[0]["key"] and r["seed_id"] == records[0]["seed_id"] for r in records)


def test_the_markdown_summary_lists_verdicts_and_replays(batch):
    text = batch["markdown"]
    assert text.startswith("### lse-fuzz grade")
    assert "| `tests/implementations/candidates/segfault.py` | **crash** |" in text or "segfault.py` | **crash**" in text
    # A failing check replays in-process; an example that crashed its worker replays isolated.
    assert "Replay: `lse-fuzz replay " in text and " --isolate`" in text


# --------------------------------------------------------------------------------------------
# Resume, interruption, determinism


def copy_candidates(directory: Path, names: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for new, old in names.items():
        shutil.copy(CANDIDATES / f"{old}.py", directory / f"{new}.py")
    return directory


def records_of(out: Path) -> dict[str, dict]:
    return {Path(r["candidate"]).stem: r for r in map(json.loads, (out / "grade.jsonl").read_text().splitlines())}


def test_resume_skips_what_was_graded_with_the_same_options_and_file(tmp_path):
    batch_dir = copy_candidates(tmp_path / "batch", {"a": "wrong_type", "b": "raises"})
    out = tmp_path / "out"
    common = ["--budget", "10", "--max-elements", "1024", "-q", "--out-dir", str(out)]
    assert run_cli("grade", str(batch_dir), *common)[0] == 1
    first = records_of(out)
    copy_candidates(batch_dir, {"c": "segfault"})
    code, _, err = run_cli("grade", str(batch_dir), *common)
    assert code == 2 and "already holds a report: pass --resume" in err
    code, _, err = run_cli("grade", str(batch_dir), *common, "--resume")
    assert code == 1 and "resumed: 2 candidates kept" in err
    second = records_of(out)
    assert second["a"] == first["a"] and second["b"] == first["b"] and second["c"]["verdict"] == "crash"
    (batch_dir / "b.py").write_text((batch_dir / "b.py").read_text() + "\n# edited\n")
    run_cli("grade", str(batch_dir), *common, "--resume")
    third = records_of(out)
    assert third["a"] == first["a"] and third["b"]["sha256"] != first["b"]["sha256"]
    run_cli("grade", str(batch_dir), *common, "--resume", "--seed", "1")
    assert all(r["seed"] == 1 for r in records_of(out).values())


def test_the_same_seed_gives_the_same_verdicts_and_counterexamples(tmp_path):
    # Bugs that fail the same way every time: a kernel reading uninitialised memory (skips_last_row)
    # fails too, but which check sees it first depends on what that memory held.
    batch_dir = copy_candidates(tmp_path / "batch", {"a": "caches_by_shape", "b": "writes_padding", "c": "buggy_no_max"})

    def graded(out: Path) -> dict:
        run_cli("grade", str(batch_dir), "--budget", "15", "--max-elements", "4096", "-q", "--out-dir", str(out))
        return {name: (r["verdict"], r["check"], r["examples"], r["counterexample"], Path(r["reproducer"]).name)
                for name, r in records_of(out).items()}

    assert graded(tmp_path / "one") == graded(tmp_path / "two")


def test_an_interrupted_batch_leaves_a_valid_report_and_resumes(tmp_path):
    batch_dir = copy_candidates(tmp_path / "batch", {"a": "wrong_type", "b": "hang", "c": "wrong_shape"})
    out = tmp_path / "out"
    options = ["--budget", "10", "--max-elements", "1024", "--call-timeout", "4", "-j", "1", "--out-dir", str(out)]
    argv = [sys.executable, "-m", "fuzz", "grade", str(batch_dir), *options]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # A shell starts background jobs with SIGINT ignored, and Python keeps an inherited SIG_IGN
    # (no KeyboardInterrupt then): give the child the default disposition, as a terminal would.
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        report = out / "grade.jsonl"
        if report.exists() and report.read_text().strip():
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted after 1 of 3 candidates" in err and "--resume" in err and "Traceback" not in err
    interrupted = records_of(out)
    assert list(interrupted) == ["a"] and interrupted["a"]["verdict"] == "fail"
    code, _, err = run_cli("grade", str(batch_dir), *options, "--resume", "-q")
    assert code == 1 and "resumed: 1 candidates kept" in err
    resumed = records_of(out)
    assert {k: v for k, v in resumed["a"].items() if k != "candidate"} == \
        {k: v for k, v in interrupted["a"].items() if k != "candidate"}
    assert resumed["b"]["verdict"] == "timeout" and resumed["c"]["check"] == "output_contract"


def test_a_private_seed_is_mixed_in_and_never_written():
    public = GradeOptions(seed=3)
    secret = GradeOptions(seed=3, private_seed="correct horse")
    assert public.effective_seed == 3 and secret.effective_seed != 3
    assert secret.effective_seed == GradeOptions(seed=3, private_seed="correct horse").effective_seed
    assert secret.effective_seed != GradeOptions(seed=3, private_seed="other").effective_seed
    assert secret.seed_id != public.seed_id and secret.key() != public.key()
    assert "correct horse" not in json.dumps(secret.public()) and "correct horse" not in repr(secret)


def test_speed_settings_do_not_change_the_resume_key():
    assert GradeOptions(threads=1).key() == GradeOptions(threads=8).key()
    assert GradeOptions(budget=10).key() != GradeOptions(budget=11).key()


# --------------------------------------------------------------------------------------------
# Bad input to the tool


@pytest.mark.parametrize(("argv", "text"), [
    (["no/such/dir"], "path='no/such/dir': no such file or directory"),
    (["{empty}"], "no candidate *.py files in this directory"),
    (["{text}"], "is not a .py file"),
    ([str(CANDIDATES), "-j", "0"], "--jobs=0; expected an int >= 1"),
    ([str(CANDIDATES), "--resume", "--overwrite"], "--resume and --overwrite contradict each other"),
    ([str(CANDIDATES), "--function", "not-a-name"], "--function='not-a-name' is not a function name"),
    ([str(CANDIDATES), "--out-dir", "{text}"], "is a file, not a directory"),
    ([str(CANDIDATES), "--budget", "0"], "budget=0"),
    ([], "the following arguments are required: FILE_OR_DIR"),
], ids=["missing", "empty_dir", "not_python", "jobs", "resume_overwrite", "function", "out_is_file", "budget",
        "no_paths"])
def test_bad_paths_and_options_exit_2_with_one_line(tmp_path, argv, text):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    argv = [a.replace("{empty}", str(tmp_path / "empty")).replace("{text}", str(tmp_path / "notes.txt")) for a in argv]
    code, out, err = run_cli("grade", *argv, "--out-dir", str(tmp_path / "out")) if "--out-dir" not in argv \
        else run_cli("grade", *argv)
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "error:" in err and text in err and "Traceback" not in err


def test_discover_sorts_dedupes_and_skips_package_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("b.py", "a.py", "__init__.py", "sub/c.py", ".hidden/d.py", "__pycache__/e.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("def lse(x): return x\n")
    found = discover([".", "a.py", "b.py:other"], function="lse")
    assert [c.name for c in found] == ["a.py", "b.py", "b.py:other", "sub/c.py"]
    assert all(isinstance(c, Candidate) and Path(c.path).is_absolute() for c in found)
    assert found[2].target.endswith("b.py:other")


def test_candidates_with_a_triton_kernel_start_first_in_name_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kernel = "import triton\n@triton.jit\ndef k(x_ptr):\n    pass\ndef lse(x):\n    return x\n"
    sources = {"a_torch.py": "import torch\ndef lse(x):\n    return torch.logsumexp(x, 1)\n",
               "b_kernel.py": kernel, "c_broken.py": "def lse(x:\n", "d_kernel.py": kernel}
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    found = discover(["."])
    assert [c.name for c in schedule(found)] == ["b_kernel.py", "d_kernel.py", "a_torch.py", "c_broken.py"]
    assert [c.name for c in found] == sorted(sources)  # discovery order itself is unchanged


# --------------------------------------------------------------------------------------------
# Static findings

SCANS = [
    ("kernel_handed_on", "import triton\n@triton.jit\ndef k(x): pass\ndef lse(x): return k", set()),
    ("kernel_launched", "import triton\n@triton.jit\ndef k(x): pass\ndef lse(x): k[(1,)](x)", set()),
    ("kernel_from_import", "from triton import jit\n@jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)", set()),
    ("autotuned", "import triton\n@triton.autotune(configs=[], key=[])\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)", set()),
    ("no_kernel", "import torch\ndef lse(x): return x", {"no_triton_kernel"}),
    ("logsumexp", "import torch\ndef lse(x): return torch.logsumexp(x, 1)", {"no_triton_kernel", "library_lse"}),
    ("logsumexp_method", "def lse(x): return x.logsumexp(dim=1)", {"no_triton_kernel", "library_lse"}),
    ("special", "import torch.special as S\ndef lse(x): return S.logsumexp(x, 1)", {"no_triton_kernel", "library_lse"}),
    ("scipy", "from scipy.special import logsumexp\ndef lse(x): return logsumexp(x)", {"no_triton_kernel", "library_lse"}),
    ("log_softmax", "import torch.nn.functional as F\ndef lse(x): return F.log_softmax(x, 1)",
     {"no_triton_kernel", "library_softmax"}),
    ("max_log", "import torch\ndef lse(x):\n m = torch.max(x, 1)[0]\n return m + torch.log(torch.exp(x - m).sum(1))",
     {"no_triton_kernel", "host_math"}),
    ("device_math_is_fine", "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x): tl.exp(x)\ndef launch(x): k[(1,)](x)", set()),
    ("reference_answer", "import reference\ndef lse(x): return reference.lse(x)", {"no_triton_kernel", "harness_import"}),
    ("interpreter_switch_is_fine", "import reference\nimport triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)", set()),
    ("harness", "import fuzz.checks\nimport triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)", {"harness_import"}),
    ("files", "import triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\ndef lse(x): open('/etc/passwd').read()", {"file_access"}),
    ("network", "import socket, triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)", {"network"}),
    ("subprocess", "import os, triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\ndef lse(x): os.system('ls')", {"subprocess"}),
    ("exit", "import sys, triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\ndef lse(x): sys.exit(1)", {"process_exit"}),
    ("eval", "import triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\ndef lse(x): return eval('x')", {"dynamic_code"}),
    ("frames", "import sys, triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\ndef lse(x): sys._getframe(1)", {"introspection"}),
    ("dispatch_stack", "import triton\nfrom torch.utils._python_dispatch import _pop_mode\n@triton.jit\ndef k(x): pass\n"
     "def launch(x):\n _pop_mode()\n k[(1,)](x)", {"introspection"}),
    ("dispatch_disabled", "import torch, triton\n@triton.jit\ndef k(x): pass\ndef launch(x):\n"
     " with torch._C._DisableTorchDispatch(): k[(1,)](x)", {"introspection"}),
    ("monkeypatch", "import torch, triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\ntorch.allclose = lambda *a: True",
     {"monkeypatch"}),
    ("environ", "import os, triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\nif os.environ.get('CI'): pass", {"environment"}),
    ("lru_cache", "import functools, triton\n@triton.jit\ndef k(x): pass\ndef launch(x): k[(1,)](x)\n@functools.lru_cache\ndef f(n): pass",
     {"memoization"}),
    ("decoy_kernel", "import torch, triton\n@triton.jit\ndef k(x): pass\ndef lse(x): return torch.special.logsumexp(x, 1)",
     {"kernel_not_launched", "library_lse"}),
    ("aten_op", "import torch\ndef lse(x): return torch.ops.aten.logsumexp.default(x, [1])",
     {"no_triton_kernel", "library_lse"}),
    ("getattr_literal", "import torch\ndef lse(x): return getattr(torch, 'logsumexp')(x, 1)",
     {"no_triton_kernel", "library_lse"}),
    ("getattr_built", "import torch\ndef lse(x): return getattr(torch, 'log' + 'sumexp')(x, 1)",
     {"no_triton_kernel", "dynamic_attribute"}),
    ("getattr_reference", "import reference\ndef lse(x): return getattr(reference, 'l' + 'se')(x)",
     {"no_triton_kernel", "harness_import"}),
    ("knows_its_grader", "import sys, os, triton\n@triton.jit\ndef k(x): pass\ndef lse(x):\n k[(1,)](x)\n"
     " return 'grade' in sys.argv or os.getcwd()", {"introspection"}),
]


@pytest.mark.parametrize(("source", "flags"), [s[1:] for s in SCANS], ids=[s[0] for s in SCANS])
def test_the_static_scan_flags_what_the_source_does(source, flags):
    assert {f.flag for f in scan_source(source)} == flags


# hostile candidate -> (verdict, flags it must have, flags it must not have): seen while it runs
RUNTIME = {
    # The source hides the call (a built name); the worker's operator record sees it.
    "hides_library_lse": ("pass", {"runtime_library_lse", "dynamic_attribute"}, {"library_lse"}),
    "removes_the_op_record": ("pass", {"runtime_record_removed", "library_lse", "introspection"},
                              {"runtime_library_lse"}),
    "returns_one_buffer": ("fail", {"overwrites_output"}, set()),
}
# Overwriting an earlier answer fails only a shift_invariance example (the one metamorphic check
# whose second answer differs from the first): at seed 0 the tenth.
BUDGET = {"returns_one_buffer": 16}


@pytest.mark.parametrize("name", sorted(RUNTIME))
def test_what_a_candidate_does_while_it_runs_is_flagged_beside_the_verdict(tmp_path, name):
    from fuzz.grading import evaluate

    verdict, required, forbidden = RUNTIME[name]
    options = GradeOptions(budget=BUDGET.get(name, 8), max_elements=1024).validated()
    record = evaluate(f"{HOSTILE / name}.py:lse", options, reproducer_dir=tmp_path)
    assert record.verdict == verdict, record.reason
    flags = {f["flag"]: f for f in record.flags}
    assert required <= set(flags) and not forbidden & set(flags), flags
    if name == "hides_library_lse":
        assert flags["runtime_library_lse"]["message"].endswith(": aten.logsumexp")
        assert flags["runtime_library_lse"]["severity"] == "cheat"


def test_every_flag_is_documented_with_a_severity():
    assert all(severity.value in ("cheat", "risk", "info") and summary for severity, summary in FLAGS.values())


@pytest.mark.gpu
def test_on_cuda_a_passing_kernel_gets_its_bandwidth_and_speedups(tmp_path):
    import torch

    from fuzz.grading import evaluate
    from fuzz.grading.bench import measure_baselines

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    options = GradeOptions(budget=20, device="cuda", bench=True, bench_shape=(4096, 4096)).validated()
    record = evaluate(str(CANDIDATES / "triton_two_pass.py"), options, reproducer_dir=tmp_path,
                      baselines=measure_baselines(options))
    assert record.verdict == "pass", record.reason
    bench = record.bench
    assert bench["output_ok"] and bench["gbps"] > 10 and bench["bytes"] == 4096 * 4096 * 4 + 4 * 4096
    assert bench["speedup_vs_reference"] > 0 and bench["speedup_vs_torch"] > 0
    assert bench["copy_gbps"] > 10 and "impossible" not in bench  # an honest kernel is not faster than a copy
    assert not any(flag["flag"] == "impossible_speed" for flag in record.flags)


@pytest.mark.gpu
def test_on_cuda_a_candidate_that_skips_work_when_timed_is_flagged(tmp_path):
    import torch

    from fuzz.grading import evaluate
    from fuzz.grading.bench import measure_baselines

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    options = GradeOptions(budget=20, device="cuda", bench=True).validated()  # 8192 x 8192: 256 MiB, past any L2
    record = evaluate(str(HOSTILE / "skips_work_when_timed.py"), options, reproducer_dir=tmp_path,
                      baselines=measure_baselines(options))
    assert record.verdict == "pass", record.reason  # every check passes: only its speed gives it away
    flags = [flag for flag in record.flags if flag["flag"] == "impossible_speed"]
    assert len(flags) == 1, f"not flagged; the benchmark measured: {record.bench}"
    (flag,) = flags
    assert flag["severity"] == "cheat" and "faster than memory allows" in flag["message"]


@pytest.mark.parametrize(("seconds", "l2_bytes", "alarm"), [
    (1.0, 0, False),  # as fast as a copy reads: a kernel at the roofline
    (1.0 / 1.4, 0, False),  # a little faster than a copy (which also writes): not beyond belief
    (1.0 / 3.0, 0, True),  # three times a copy: it did not read its input
    (1.0 / 3.0, 1 << 30, False),  # an input that fits in the L2 cache twice: not judged
], ids=["roofline", "a_bit_faster", "impossible", "fits_in_l2"])
def test_impossible_speed_is_judged_against_the_copy_bandwidth(seconds, l2_bytes, alarm):
    from fuzz.grading.bench import impossible_speed

    # A copy of 256 MiB taking 2 s moves 512 MiB: 0.27 GB/s; reading 256 MiB in 1 s is the same rate.
    found = impossible_speed(input_bytes=256 << 20, seconds=seconds, copy_seconds=2.0, l2_bytes=l2_bytes)
    assert bool(found) is alarm
    if alarm:
        assert "3.0x the measured copy bandwidth" in found


def test_a_call_stuck_on_the_gpu_delays_only_the_benchmark_not_other_calls(tmp_path):
    import threading
    import time

    from fuzz.grading.gpu_lock import GpuLock

    stuck, bencher, other = (GpuLock(tmp_path, patience=0.2) for _ in range(3))
    release = threading.Event()
    events: list[str] = []

    def hang_in_a_call():
        with stuck.shared():
            events.append("stuck call holds the GPU")
            release.wait(10)

    def benchmark():
        with bencher.exclusive():
            events.append("benchmark")

    hanging = threading.Thread(target=hang_in_a_call)
    hanging.start()
    while not events:
        time.sleep(0.01)
    waiting = threading.Thread(target=benchmark)
    waiting.start()
    time.sleep(0.05)  # the benchmark now waits, holding the turnstile
    started = time.monotonic()
    with other.shared():  # before the fix this blocked until the stuck call ended
        events.append("other call")
    assert time.monotonic() - started < 2.0
    assert "benchmark" not in events  # never while a call holds the GPU
    release.set()
    hanging.join(5)
    waiting.join(5)
    assert events == ["stuck call holds the GPU", "other call", "benchmark"]


def test_a_benchmark_on_one_gpu_does_not_wait_for_calls_on_another(tmp_path):
    from fuzz.grading.gpu_lock import GpuLock

    calls_on_a = GpuLock(tmp_path, gpu="gpu-a")
    bench_on_b, bench_on_a = GpuLock(tmp_path, gpu="gpu-b", patience=0.1), GpuLock(tmp_path, gpu="gpu-a", patience=0.1)
    with calls_on_a.shared():
        with bench_on_b.exclusive():  # returns at once: another GPU's lock
            pass
        assert not bench_on_a._try_exclusive()  # the same GPU's benchmark waits for the call


@pytest.mark.parametrize("attack", ["kills_fork_server", "kills_siblings"])
def test_a_candidate_that_kills_the_grading_processes_crashes_alone(tmp_path, attack):
    # It takes down the driver grading its neighbour too: the neighbour still passes, the batch
    # finishes with one record each, and only the attacker gets a verdict against it.
    batch_dir = tmp_path / "batch"
    batch_dir.mkdir()
    hostile = ROOT / "tests" / "implementations" / "hostile" / f"{attack}.py"
    (batch_dir / "a_attacker.py").write_text(hostile.read_text())
    (batch_dir / "b_neighbour.py").write_text((ROOT / "tests/implementations/correct/torch_float32.py").read_text())
    out = tmp_path / "out"
    code, _, _ = run_cli("grade", str(batch_dir), "--budget", "10", "--max-elements", "1024", "-j", "2", "-q",
                         "--out-dir", str(out))
    records = records_of(out)
    assert code == 1 and set(records) == {"a_attacker", "b_neighbour"}
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    assert records["a_attacker"]["verdict"] == "crash"
    assert ("killed the fork server" if attack == "kills_fork_server" else "its grading driver died") \
        in records["a_attacker"]["reason"]


def test_a_candidate_that_rewrites_its_neighbours_files_changes_nothing_graded(tmp_path):
    # It appends a failing import to every other file of the folder the grader was given, found in
    # the grader's command line; each candidate is graded from the bytes read as the batch started.
    batch_dir = tmp_path / "batch"
    batch_dir.mkdir()
    (batch_dir / "a_tamperer.py").write_text((HOSTILE / "tampers_with_neighbours.py").read_text())
    neighbour = batch_dir / "b_neighbour.py"
    neighbour.write_text((ROOT / "tests/implementations/correct/torch_float32.py").read_text())
    submitted = hashlib.sha256(neighbour.read_bytes()).hexdigest()
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "fuzz", "grade", str(batch_dir), "--budget", "10", "--max-elements",
                           "1024", "-j", "1", "-q", "--out-dir", str(out)], capture_output=True, text=True, timeout=600)
    assert b"sabotaged by a neighbour" in neighbour.read_bytes()  # the attack did happen
    records = records_of(out)
    assert proc.returncode == 0, proc.stderr  # both pass: the neighbour as submitted
    assert records["b_neighbour"]["verdict"] == "pass", records["b_neighbour"]["reason"]
    assert records["b_neighbour"]["sha256"] == submitted  # the hash of what was graded
    assert records["b_neighbour"]["target"] == f"{neighbour}:lse"  # named by its own path, not the copy's


@pytest.mark.parametrize("tamper", [{"seconds": "abc"}, {"flags": "x"}, {"flags": [1]}, {"verdict": "great"},
                                    {"slow": [{"seconds": None}]}, {"examples": True}],
                         ids=["seconds_text", "flags_text", "flag_not_a_dict", "unknown_verdict", "slow_call_no_time",
                              "examples_bool"])
def test_resume_grades_a_malformed_record_again_instead_of_crashing(tmp_path, tamper):
    batch_dir = copy_candidates(tmp_path / "batch", {"a": "wrong_type", "b": "raises"})
    out = tmp_path / "out"
    common = ["--budget", "10", "--max-elements", "1024", "-q", "--out-dir", str(out)]
    run_cli("grade", str(batch_dir), *common)
    first = records_of(out)
    lines = (out / "grade.jsonl").read_text().splitlines()
    (out / "grade.jsonl").write_text("\n".join([json.dumps({**json.loads(lines[0]), **tamper}), *lines[1:]]) + "\n")
    code, _, err = run_cli("grade", str(batch_dir), *common, "--resume")
    assert code == 1 and "resumed: 1 candidates kept" in err, err
    again = records_of(out)
    assert {k: r["verdict"] for k, r in again.items()} == {k: r["verdict"] for k, r in first.items()}
    csv_rows = (out / "grade.csv").read_text().splitlines()[1:]
    assert sorted(Path(row.split(",")[0]).stem for row in csv_rows) == sorted(again)


def test_candidate_text_cannot_rewrite_the_markdown_or_the_terminal():
    from fuzz.grading import GradeRecord
    from fuzz.grading.reports import format_record, render_markdown
    from fuzz.outcomes import Verdict

    attack = "boom\n```\n\n## All candidates pass\n![ok](https://example.invalid/pixel.png) <img src=x> | forged |"
    record = GradeRecord(candidate="evil`.py", target="evil.py:lse", sha256=None, key="k", verdict=Verdict.ERROR,
                         reason="the candidate raised: " + attack, details=attack + "\x1b[2J\x1b[32mPASS\x1b[0m",
                         replay="lse-fuzz replay x.pt --impl evil.py:lse", examples=3, calls=3, seconds=1.0,
                         candidate_seconds=0.5, seed=0,
                         options={"seed": 0, "contract": "strict", "private_seed": False})
    text = render_markdown([record], title="lse-fuzz grade")
    fence = next(line for line in text.splitlines() if line.endswith("text"))[:-len("text")]
    block = text.split(fence + "text\n", 1)[1].split("\n" + fence + "\n", 1)[0]
    assert len(fence) > 3 and "## All candidates pass" in block  # the attack stays inside the block
    row = next(line for line in text.splitlines() if line.startswith("| ``evil`.py``"))
    # The reason is one code span (literal: no image, no HTML) and its pipes forge no cell.
    assert row.endswith("| ````the candidate raised: boom ```  ## All candidates pass ![ok](https://example.invalid/"
                        "pixel.png) <img src=x> \\| forged \\|```` |")
    assert [line for line in text.splitlines() if "All candidates pass" in line] == [row, "## All candidates pass"]
    assert "\x1b" not in text and "\\x1b[2J" in text
    assert "\x1b" not in format_record(record) and "\\x1b[32mPASS" in format_record(record)


def test_a_detached_process_cannot_rewrite_the_report_after_the_grade(tmp_path):
    # The attack as seen: a candidate leaves a process behind that waits for the grader to finish,
    # then rewrites its own record to pass. It dies with its worker, before it can write.
    out = tmp_path / "out"
    batch_dir = tmp_path / "batch"
    batch_dir.mkdir()
    (batch_dir / "forger.py").write_text(f'''
import json, os, time
import torch

def lse(x):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(1.0)
            path = {str(out / "grade.jsonl")!r}
            records = [dict(json.loads(line), verdict="pass") for line in open(path)]
            open(path, "w").write("".join(json.dumps(r) + "\\n" for r in records))
        os._exit(0)
    os.wait()
    return torch.zeros(x.shape[0])  # wrong: the verdict must stay fail
''')
    code, _, _ = run_cli("grade", str(batch_dir), "--budget", "5", "--max-elements", "1024", "-q",
                         "--out-dir", str(out))
    time.sleep(2.0)
    assert code == 1 and records_of(out)["forger"]["verdict"] == "fail"


@pytest.mark.parametrize("given", ["env", "argument"])
def test_the_private_seed_appears_in_no_output_even_to_a_candidate_that_looks(tmp_path, given):
    import secrets
    import subprocess
    import sys

    # One per run: under xdist the other parametrization's grader runs beside this one, and this
    # spy may read its seed in the moment before it wipes it (README, threat model); what must
    # never leak is a run's own seed (seen in CI with one secret for both: a flaky failure).
    secret = f"hunter2-private-seed-{given}-{secrets.token_hex(6)}"
    batch_dir = tmp_path / "batch"
    batch_dir.mkdir()
    shutil.copy(ROOT / "tests" / "implementations" / "hostile" / "reads_the_secret.py", batch_dir / "spy.py")
    out = tmp_path / "out"
    env = dict(os.environ, LSE_TEST_SECRET=secret)
    seed = "env:LSE_TEST_SECRET" if given == "env" else secret
    run = subprocess.run([sys.executable, "-m", "fuzz", "grade", str(batch_dir), "--budget", "3", "--out-dir", str(out),
                          "--private-seed", seed, "--markdown", str(tmp_path / "summary.md")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    records = records_of(out)
    assert records["spy"]["verdict"] == "error"
    assert len(records["spy"]["details"]) > 1000  # it did read the other processes' environments
    written = [run.stdout, run.stderr] + [p.read_text(errors="replace") for p in [*out.rglob("*"), tmp_path / "summary.md"]
                                          if p.is_file()]
    assert not [text for text in written if secret in text]


def test_a_candidate_that_stops_the_grading_processes_does_not_hang_the_batch(tmp_path):
    # It stops the fork server and every driver and worker beside it: each is continued by the
    # grader's process, so every candidate is graded (before: nothing was, in 400 s), and the
    # stopper, run again alone, is blamed (test_grade_signals has the reason).
    batch_dir = tmp_path / "batch"
    batch_dir.mkdir()
    shutil.copy(ROOT / "tests" / "implementations" / "hostile" / "stops_the_grading_processes.py", batch_dir / "a_stopper.py")
    for name in ("b", "c", "d"):
        shutil.copy(ROOT / "tests" / "implementations" / "correct" / "torch_float32.py", batch_dir / f"{name}_neighbour.py")
    out = tmp_path / "out"
    started = time.monotonic()
    code, _, _ = run_cli("grade", str(batch_dir), "--budget", "10", "--max-elements", "1024", "-j", "2", "-q",
                         "--worker-timeout", "120", "--out-dir", str(out))
    assert time.monotonic() - started < 150
    assert code == 1 and {k: r["verdict"] for k, r in records_of(out).items()} == {
        "a_stopper": "crash", "b_neighbour": "pass", "c_neighbour": "pass", "d_neighbour": "pass"}

