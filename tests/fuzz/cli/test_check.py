"""``lse-fuzz check TARGET``: verdicts and exit codes, the counterexample and its replay command,
JSON and Markdown output, and one clear line (exit 2, no traceback) for every bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.cli import main

ROOT = Path(__file__).resolve().parents[3]
CANDIDATES = ROOT / "tests" / "implementations" / "candidates"


def candidate(name: str) -> str:
    return str(CANDIDATES / f"{name}.py")


@pytest.fixture
def check(tmp_path, capsys):
    """Run ``lse-fuzz check`` in this process; (exit code, stdout, stderr)."""

    def check(*argv: str) -> tuple[int, str, str]:
        argv = ["check", *argv]
        if "--reproducers" not in argv and "--replay" not in argv:
            argv += ["--reproducers", str(tmp_path / "reproducers")]
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse's own errors exit from inside parse_args
            code = exit.code
        out, err = capsys.readouterr()
        return code, out, err

    return check


def test_a_correct_candidate_passes_with_exit_0(check, tmp_path):
    report, markdown = tmp_path / "result.json", tmp_path / "comment.md"
    code, out, _ = check(candidate("torch_float64"), "--budget", "5", "--json", str(report),
                         "--markdown", str(markdown))
    assert code == 0
    assert out.startswith(f"PASS {candidate('torch_float64')}:lse")
    record = json.loads(report.read_text())
    assert record["verdict"] == "pass" and record["examples"] == 5 and record["result"]["status"] == "passed"
    assert {f["flag"] for f in record["flags"]} >= {"no_triton_kernel", "library_lse"}
    text = markdown.read_text()
    assert text.startswith("### lse-fuzz check") and "**pass**" in text and "`library_lse`" in text


def test_a_failing_check_prints_the_counterexample_and_a_replay_command_with_exit_1(check, tmp_path, capsys):
    code, out, _ = check(candidate("mutates_input"), "--budget", "20")
    assert code == 1
    assert out.startswith(f"FAIL {candidate('mutates_input')}:lse: check 'input_unchanged'")
    assert "input:    float32 (1, 1) contiguous on cpu" in out  # shrunk to the smallest input
    assert "before:   0x00000000 (0.0)" in out and "after:    0x80000000 (-0.0)" in out
    replay = next(line for line in out.splitlines() if "replay:" in line).split("replay:", 1)[1].strip()
    assert replay.startswith("lse-fuzz replay ") and replay.endswith(f"--impl {candidate('mutates_input')}:lse")
    reproducer = replay.split()[2]
    assert Path(reproducer).is_file()
    assert main(["replay", reproducer, "--impl", candidate("mutates_input"), "--isolate"]) == 1  # isolated replay
    assert "check 'input_unchanged'" in capsys.readouterr().out


@pytest.mark.parametrize(("name", "options", "verdict", "text"), [
    ("segfault", (), "CRASH", re.escape("was killed by SIGSEGV")),
    ("sys_exit", (), "CRASH", re.escape("the candidate called sys.exit(3)")),
    # The window watched after the first deadline is measured: 2.01 s on a loaded machine.
    ("hang", ("--call-timeout", "1"), "TIMEOUT", r"past the first deadline of 1 s, and in the 2(\.\d+)? s after it"),
    ("memory_hog", ("--memory-limit", "4"), "CRASH", re.escape("out of memory")),
], ids=["segfault", "sys_exit", "hang", "out_of_memory"])
def test_a_lost_worker_ends_the_run_with_exit_1_and_a_replayable_input(check, tmp_path, capsys, name, options,
                                                                       verdict, text):
    code, out, _ = check(candidate(name), "--budget", "20", *options)
    assert code == 1
    assert out.startswith(f"{verdict} {candidate(name)}:lse") and re.search(text, out)
    assert "input:    float32 (1, 1) contiguous on cpu; rows: 1 x zeros" in out  # the first example
    replay = next(line for line in out.splitlines() if "replay:" in line).split("replay:", 1)[1].strip()
    assert replay.startswith("lse-fuzz replay ") and replay.endswith(f"--impl {candidate(name)}:lse --isolate")
    if name == "segfault":
        assert "segfault.py\", line 7 in lse" in out  # the worker's fault report
        assert main(replay.split()[1:]) == 1  # the printed command, run
        out = capsys.readouterr().out
        assert out.startswith("CRASH") and "SIGSEGV" in out


def test_an_exception_is_an_error_verdict_with_the_workers_traceback(check):
    code, out, _ = check(candidate("raises"), "--budget", "20")
    assert code == 1
    assert out.startswith("ERROR") and "RuntimeError raised by the implementation" in out
    assert "raises.py\", line 8, in lse" in out


def test_a_construct_the_cpu_cannot_run_is_unsupported_with_exit_4_and_replays_on_a_gpu(check, tmp_path, capsys):
    report = tmp_path / "result.json"
    code, out, _ = check(candidate("inline_asm"), "--budget", "20", "--json", str(report))
    assert code == 4  # neither a failure (1) nor bad input (2) nor the tool's fault (3)
    assert out.startswith(f"UNSUPPORTED {candidate('inline_asm')}:lse\n")
    assert ("  UNSUPPORTED on the CPU: the kernel uses tl.inline_asm_elementwise, which the CPU's emulation of Triton "
            "cannot run as a GPU does (inline GPU assembly has no CPU meaning); run with --device cuda for a verdict"
            ) in out.splitlines()
    record = json.loads(report.read_text())
    assert record["verdict"] == "unsupported" and record["check"] is None and record["exception"] is None
    assert record["result"]["status"] == "unsupported"
    assert record["result"]["failure"]["construct"] == "tl.inline_asm_elementwise"
    replay = record["replay"]
    assert replay.endswith(" --device cuda")
    # Replayed on the CPU anyway (here, without a GPU): unsupported again, the same exit code.
    argv = replay.split()[2:-2]  # FILE --impl TARGET
    assert main(["replay", *argv, "--device", "cpu"]) == 4
    assert "UNSUPPORTED" in capsys.readouterr().out


def test_a_candidate_raising_the_emulators_refusal_itself_is_an_error(check):
    hostile = ROOT / "tests" / "implementations" / "hostile" / "claims_unsupported.py"
    code, out, _ = check(str(hostile), "--budget", "5")
    assert code == 1 and out.startswith("ERROR") and "EmulationUnsupported raised by the implementation" in out


def test_noise_is_reported_but_tolerated(check):
    code, out, _ = check(candidate("noisy"), "--budget", "3")
    assert code == 0 and "flag:     prints (info): printed while running:" in out


def test_the_function_defaults_to_lse_and_module_targets_work(check, tmp_path):
    report = tmp_path / "r.json"
    code, _, _ = check("candidates.torch_float64", "--budget", "2", "--json", str(report))
    assert code == 0 and json.loads(report.read_text())["target"] == "candidates.torch_float64:lse"


def test_a_private_seed_changes_the_examples_and_stays_out_of_the_report(check, tmp_path):
    public, private = tmp_path / "public.json", tmp_path / "private.json"
    check(candidate("torch_float64"), "--budget", "2", "--json", str(public))
    check(candidate("torch_float64"), "--budget", "2", "--private-seed", "hunter2", "--json", str(private))
    a, b = json.loads(public.read_text()), json.loads(private.read_text())
    assert a["seed"] == b["seed"] == 0 and a["seed_id"] != b["seed_id"]
    assert "hunter2" not in private.read_text() and b["options"]["private_seed"] is True
    secret_file, from_file = tmp_path / "secret", tmp_path / "from_file.json"
    secret_file.write_text("hunter2\n")
    check(candidate("torch_float64"), "--budget", "2", "--private-seed", f"file:{secret_file}", "--json", str(from_file))
    assert json.loads(from_file.read_text())["seed_id"] == b["seed_id"]


# --------------------------------------------------------------------------------------------
# Bad input: one line on stderr, exit 2, never a traceback

BAD = [
    (["no/such/kernel.py"], "no such file"),
    ([str(CANDIDATES)], "is a directory, not a .py file"),
    ([candidate("syntax_error")], "syntax_error.py, line 4: SyntaxError: expected ':'"),
    ([candidate("missing_function")], "has no attribute 'lse'"),
    ([candidate("wrong_signature")], "cannot be called as lse(x)"),
    ([candidate("import_error")], "ModuleNotFoundError: No module named 'triton_lse_helpers_that_do_not_exist'"),
    ([candidate("exits_on_import")], "importing it called sys.exit("),
    ([f"{candidate('triton_two_pass')}:_two_pass_kernel"], "is a @triton.jit kernel"),
    (["no_such_package.kernels:lse"], "cannot import 'no_such_package.kernels'"),
    ([candidate("torch_float64"), "--budget", "0"], "budget=0; expected an int >= 1"),
    ([candidate("torch_float64"), "--budget", "many"], "argument --budget: invalid int value: 'many'"),
    ([candidate("torch_float64"), "--seed", "-1"], "seed=-1; expected an int >= 0"),
    ([candidate("torch_float64"), "--contract", "loose"], "argument --contract: invalid choice: 'loose'"),
    ([candidate("torch_float64"), "--device", "tpu"], "device='tpu'; expected auto, cpu, cuda or cuda:N"),
    ([candidate("torch_float64"), "--checks", "agreement,nope"], "unknown 'nope'"),
    ([candidate("torch_float64"), "--call-timeout", "0"], "--call-timeout=0.0; expected a number of seconds > 0"),
    ([candidate("torch_float64"), "--worker-timeout", "-3"], "--worker-timeout=-3.0; expected a number of seconds > 0"),
    ([candidate("torch_float64"), "--memory-limit", "-1"], "--memory-limit=-1.0; expected a number >= 0"),
    ([candidate("torch_float64"), "--profile", "fast"], "--profile='fast'; expected one of lse-ci"),
    ([candidate("torch_float64"), "--bench-shape", "8192"], "--bench-shape='8192'; expected MxN"),
    ([candidate("torch_float64"), "--private-seed", ""], "--private-seed=''"),
    ([candidate("torch_float64"), "--private-seed", "env:LSE_FUZZ_UNSET_SECRET"], "LSE_FUZZ_UNSET_SECRET is not set"),
    ([candidate("torch_float64"), "--private-seed", "file:/no/such/secret"], "cannot read it"),
    ([candidate("torch_float64"), "--json", "/no/such/dir/r.json"], "the directory '/no/such/dir' does not exist"),
]


@pytest.mark.parametrize(("argv", "text"), BAD, ids=[
    "missing_file", "directory", "syntax_error", "missing_function", "wrong_signature", "import_error",
    "exits_on_import", "kernel_not_launcher", "missing_module", "budget_zero", "budget_not_int", "seed_negative",
    "contract", "device", "checks", "call_timeout", "timeout", "memory_limit", "profile", "bench_shape",
    "private_seed_empty", "private_seed_env", "private_seed_file", "json_dir",
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(check, argv, text):
    code, out, err = check(*argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1, err  # one line: no usage text, no banner, no traceback
    assert err.startswith("lse-fuzz") and "error:" in err and text in err, err


def test_cuda_without_a_gpu_is_a_usage_error(check):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    code, _, err = check(candidate("torch_float64"), "--device", "cuda")
    assert code == 2 and "--device='cuda', but no CUDA device is available: use cpu" in err


def test_the_command_line_exits_2_with_one_line_end_to_end(tmp_path):
    """As CI runs it: a separate process, a real exit code, nothing but one line on stderr.
    (test_grade's interruption test runs a whole batch end to end.)"""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    bad = subprocess.run([sys.executable, "-m", "fuzz", "check", "missing.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("lse-fuzz: error: target='missing.py': no such file") and bad.stderr.count("\n") == 1


READS_PAST_ITS_ROW = '''
import os
import torch
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
import triton
import triton.language as tl


@triton.jit
def _reads_past(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols).to(tl.float32)  # every lane, discarded below: right values
    x = tl.where(cols < N, x, -float("inf"))
    m = tl.max(x, 0)
    shift = tl.where((m == float("inf")) | (m == -float("inf")), 0.0, m)
    s = tl.where((m == float("inf")) | (m == -float("inf")), m, shift + tl.log(tl.sum(tl.exp(x - shift), 0)))
    tl.store(out_ptr + row, tl.where(tl.max((x != x).to(tl.int32), 0) > 0, float("nan"), s))


def lse(x):
    x = x.contiguous()
    out = torch.full((x.shape[0],), -float("inf"), dtype=torch.float32, device=x.device)
    if x.numel():
        _reads_past[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
'''


def test_a_kernel_that_reads_past_its_row_fails_memory_bounds_on_the_cpu_and_its_replay_too(check, tmp_path,
                                                                                            capsys):
    # Right values (the lanes read are discarded), so no other check can see it: the read itself fails.
    kernel = tmp_path / "reads_past.py"
    kernel.write_text(READS_PAST_ITS_ROW)
    code, out, _ = check(str(kernel), "--budget", "60", "--device", "cpu")
    assert code == 1 and f"FAIL {kernel}:lse: check 'memory_bounds'" in out, out
    assert "load out of bounds during the first call" in out
    assert "element past the end of a" in out and "kernel:   _reads_past at reads_past.py:" in out
    replay = next(line.split("replay:", 1)[1].split() for line in out.splitlines() if "replay:" in line)
    assert replay[:2] == ["lse-fuzz", "replay"] and main(replay[1:]) == 1
    assert "check 'memory_bounds' failed" in capsys.readouterr().out
    code, out, _ = check(str(kernel), "--budget", "60", "--device", "cpu", "--checks", "agreement,bounds,determinism")
    assert code == 0, out  # without memory_bounds the read happens, as Triton's interpreter does it: right values


def test_a_kernel_that_reads_scratch_it_skipped_writing_fails_uninitialized_read_in_its_worker(check, capsys):
    # A row of -inf skips storing its max to a torch.empty scratch buffer, then reads it back: the
    # isolated worker tracks the call's allocations and stops the read before it happens.
    kernel = ROOT / "tests" / "implementations" / "doubles" / "reads_unwritten.py"
    code, out, _ = check(str(kernel), "--budget", "100", "--device", "cpu")
    assert code == 1 and f"FAIL {kernel}:lse: check 'uninitialized_read'" in out, out
    assert "load of memory nothing wrote during the first call" in out
    assert "never written since torch.empty at reads_unwritten.py:" in out
    assert "kernel:   _reads_unwritten_kernel at reads_unwritten.py:" in out
    replay = next(line.split("replay:", 1)[1].split() for line in out.splitlines() if "replay:" in line)
    assert main(replay[1:]) == 1 and "check 'uninitialized_read' failed" in capsys.readouterr().out
