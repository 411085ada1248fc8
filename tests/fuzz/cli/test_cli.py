"""The ``lse-fuzz`` entry points: ``python -m fuzz`` and the console script are the same CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from fuzz.cli import COMMANDS, main
from fuzz.outcomes import ExitCode

ROOT = Path(__file__).resolve().parents[3]


def _run(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def test_python_m_fuzz_version_and_help():
    version = _run(sys.executable, "-m", "fuzz", "--version")
    # The one version string: the installed distribution's metadata (pyproject.toml).
    assert version.returncode == 0 and version.stdout.strip() == f"lse-fuzz {metadata.version('lse-fuzz')}"
    helped = _run(sys.executable, "-m", "fuzz", "--help")
    assert helped.returncode == 0
    for name in COMMANDS:
        assert name in helped.stdout


def test_the_console_script_is_the_same_cli():
    script = shutil.which("lse-fuzz")
    if script is None:
        pytest.skip("the package is not installed (pip install -e .)")
    assert _run(script, "--version").stdout == _run(sys.executable, "-m", "fuzz", "--version").stdout


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_an_unknown_command_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("lse-fuzz: error:") and "frobnicate" in err


COUNT_FORK_SERVERS = """
import sys
from fuzz.isolation.fork_server import client as zygote
launch = zygote.Zygote.launch.__func__
started = []
def counting(cls, env):
    started.append(sorted(env))
    return launch(cls, env)
zygote.Zygote.launch = classmethod(counting)
from fuzz.cli import main
code = main(sys.argv[1:])
print("fork servers started:", len(started))
raise SystemExit(code)
"""


def test_the_fork_server_started_early_is_the_one_the_run_uses():
    # The CLI starts the workers' fork server before it imports torch, with the environment it
    # foresees (Triton's interpreter on this GPU-less machine included, TRITON_INTERPRET unset here):
    # a wrong guess would start a second one, seconds of imports again.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", COUNT_FORK_SERVERS, "check",
                           "tests/implementations/correct/torch_float32.py:lse", "--budget", "4", "--parts", "1"],
                          capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "fork servers started: 1" in done.stdout


def test_the_tools_own_failure_is_one_paragraph_and_a_saved_traceback(monkeypatch, capsys):
    # E.g. the GPU filled by other jobs while the fuzzer made its own inputs: no traceback on the screen.
    def fails(*args, **kwargs):
        raise RuntimeError("CUDA error: out of memory\nSearch for `cudaErrorMemoryAllocation'")

    monkeypatch.setattr("fuzz.grading.evaluate", fails)
    code = main(["check", "reference:lse", "--device", "cpu", "--budget", "3"])
    err = capsys.readouterr().err
    assert code == ExitCode.INTERNAL, err
    assert "Traceback" not in err and "lse-fuzz: internal error: RuntimeError: CUDA error: out of memory" in err
    saved = Path(err.rsplit("saved in ", 1)[1].strip())
    assert "Traceback" in saved.read_text() and "cudaErrorMemoryAllocation" in saved.read_text()
    saved.unlink()


def test_grade_counts_records_in_the_file_the_grading_package_writes():
    # The supervisor counts the report's records without importing fuzz.grading (torch): by name.
    from fuzz.commands.grade import REPORT
    from fuzz.grading.reports import REPORT_JSONL

    assert REPORT == REPORT_JSONL


def test_a_command_called_with_arguments_is_not_supervised(monkeypatch, tmp_path, capsys):
    # main(argv) runs in its caller's process (a test, a script): forking it would run the caller's
    # code twice. Only the command line's own process (argv None) supervises its grading.
    import fuzz.commands.grade as grade_command

    def refuse(args):
        raise AssertionError("supervised")

    monkeypatch.setattr(grade_command, "supervise", refuse)
    code = main(["grade", str(tmp_path / "missing.py"), "--out-dir", str(tmp_path / "out")])
    assert code == 2, capsys.readouterr().err
