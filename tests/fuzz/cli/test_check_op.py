"""``lse-fuzz check TARGET --op merge_state``: exit codes and reports, a crash and a hang of the
implementation as verdicts, the replay of its reproducer, and one line (exit 2) for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz.cli import main

ROOT = Path(__file__).resolve().parents[3]
MERGES = ROOT / "tests" / "implementations" / "doubles" / "merge.py"


@pytest.fixture
def cli(tmp_path, capsys):
    """Run ``lse-fuzz ARGS`` in this process (an op's run has a child process of its own)."""

    def cli(*argv: str) -> tuple[int, str, str]:
        try:
            code = main([*argv])
        except SystemExit as exit:
            code = exit.code
        out, err = capsys.readouterr()
        return code, out, err

    return cli


def _file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "kernel.py"
    path.write_text("import os, time\nimport torch\n\n" + body)
    return f"{path}:merge_state"


def test_a_correct_merge_passes_and_a_broken_one_fails_with_its_replay(cli, tmp_path):
    reproducers = str(tmp_path / "r")
    code, out, err = cli("check", f"{MERGES}:correct", "--op", "merge_state", "--device", "cpu", "--budget", "40",
                         "--reproducers", reproducers, "--json", str(tmp_path / "pass.json"))
    assert code == 0 and out.startswith("PASS ") and "--op merge_state" in err, (out, err)
    assert json.loads((tmp_path / "pass.json").read_text())["status"] == "passed"
    target = f"{MERGES}:finite_sentinel"
    code, out, _ = cli("check", target, "--op", "merge_state", "--device", "cpu", "--budget", "40",
                       "--reproducers", reproducers)
    assert code == 1 and out.startswith("FAIL ") and "expected -inf" in out, out
    replay = next(line for line in out.splitlines() if "replay:" in line).split("replay:")[1].split()
    assert replay[:2] == ["lse-fuzz", "replay"]
    code, again, _ = cli(*replay[1:])
    assert code == 1 and again.startswith("FAIL ") and "expected -inf" in again
    code, fixed, _ = cli("replay", replay[2], "--impl", "reference:merge_state")
    assert code == 0 and fixed.startswith("PASS ")


def test_the_declared_base(cli, tmp_path):
    target = _file(tmp_path, "import reference\n\ndef merge_state(v_a, s_a, v_b, s_b):\n"
                             "    return reference.merge_state(v_a, s_a, v_b, s_b, base=2)\n")
    common = ("--op", "merge_state", "--device", "cpu", "--budget", "30", "--reproducers", str(tmp_path / "r"))
    assert cli("check", target, *common, "--lse-base", "2")[0] == 0
    code, out, _ = cli("check", target, *common)
    assert code == 1 and "the kernel's LSEs are base 2" in out


def test_a_crash_and_a_hang_are_verdicts(cli, tmp_path):
    crash = _file(tmp_path, "def merge_state(v_a, s_a, v_b, s_b):\n"
                            "    if v_a.shape[0] == 0:\n        os.abort()\n"
                            "    return v_a.clone(), torch.logaddexp(s_a, s_b)\n")
    code, out, _ = cli("check", crash, "--op", "merge_state", "--device", "cpu", "--reproducers", str(tmp_path))
    assert code == 1 and out.startswith("CRASH ") and "killed by SIGABRT" in out, out
    # The input it died on, saved before the call, and its replay command.
    assert "input:    v " in out and "(0, " in out.split("input:")[1].splitlines()[0], out
    saved = out.split("replay:   lse-fuzz replay ")[1].split()[0]
    assert Path(saved).parent == tmp_path and Path(saved).is_file()
    hang = _file(tmp_path, "def merge_state(v_a, s_a, v_b, s_b):\n"
                           "    if v_a.shape[0] == 0:\n        time.sleep(600)\n"
                           "    return v_a.clone(), torch.logaddexp(s_a, s_b)\n")
    code, out, _ = cli("check", hang, "--op", "merge_state", "--device", "cpu", "--worker-timeout", "20",
                       "--reproducers", str(tmp_path))
    assert code == 1 and out.startswith("TIMEOUT ") and "--worker-timeout 20 s" in out, out
    assert "input:    v " in out and "replay:   lse-fuzz replay" in out


@pytest.mark.parametrize(("argv", "message"), [
    (("reference:lse", "--op", "merge_state"), "its signature does not take 4 tensors"),
    (("BODY:def merge_state(v_a, s_a, v_b, s_b):\n    return v_a\n", "--op", "merge_state"),
     "returned Tensor on an ordinary input, not a pair of tensors"),
    (("reference:merge_state", "--op", "merge_state", "--contract", "finite"), "--contract: an option of the row LSE"),
    (("reference:merge_state", "--op", "merge_state", "--checks", "monotone"), "--op merge_state has the checks"),
    (("reference:merge_state", "--op", "merge_state", "--dtypes", "float64"), "--dtypes='float64'"),
    (("reference:merge_state", "--op", "merge_state", "--lse-base", "10"), "invalid choice: '10'"),
    (("reference:merge_state", "--op", "merged"), "invalid choice: 'merged'"),
    (("missing.py:merge_state", "--op", "merge_state"), "no such file"),
], ids=["signature", "structure", "row option", "checks", "dtypes", "base", "op", "missing"])
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, argv, message):
    target = _file(tmp_path, argv[0][5:]) if argv[0].startswith("BODY:") else argv[0]
    code, out, err = cli("check", target, *argv[1:], "--device", "cpu", "--reproducers", str(tmp_path))
    assert code == 2 and out == "", out
    lines = [line for line in err.splitlines() if not line.startswith("lse-fuzz check ")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in err, err


def test_the_merge_kernels_mutants_are_each_killed_by_a_named_check(cli, tmp_path):
    code, out, _ = cli("mutants", "--op", "merge_state", "--device", "cpu", "--budget", "80", "--out-dir", str(tmp_path))
    assert code == 0 and "merge mutants: 5 of 5 killed" in out, out
    report = json.loads((tmp_path / "merge-mutation.json").read_text())
    assert report["killed"] == report["total"] == 5
    assert all(row["check"] in ("agreement", "swap", "empty_identity", "shift") for row in report["mutants"]), report


def test_the_merge_mutants_list_show_and_bad_input(cli):
    code, out, _ = cli("mutants", "--op", "merge_state", "--list")
    assert code == 0 and len(out.splitlines()) == 5 and out.startswith("merge_no_empty_guard")
    code, out, _ = cli("mutants", "--op", "merge_state", "--show", "merge_lse_stride_ignored")
    assert code == 0 and out.startswith("--- a/reference/_merge_state_kernel.py") and "+    s_a = tl.load(s_a_ptr + row" in out
    code, out, err = cli("mutants", "--op", "merge_state", "no_max_added")
    assert code == 2 and "no_max_added: not a merge mutant" in err
    code, out, err = cli("mutants", "--op", "merge_state", "--backward")
    assert code == 2 and "--backward: an option of the row LSE; mutants --op merge_state takes" in err


def test_combine_through_the_command_line(cli, tmp_path):
    combines = ROOT / "tests" / "implementations" / "doubles" / "combine.py"
    common = ("--op", "combine", "--device", "cpu", "--budget", "30", "--reproducers", str(tmp_path))
    code, out, _ = cli("check", f"{combines}:correct", *common)
    assert code == 0 and out.startswith("PASS ") and "--op combine" in out
    code, out, _ = cli("check", f"{combines}:first_16_splits", *common, "--budget", "150")
    assert code == 1 and "check 'agreement' failed" in out and "splits" in out, out
    assert cli("mutants", "--op", "combine")[0] == 2


def test_a_batch_of_merge_kernels_is_graded_one_verdict_each(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "tests" / "implementations"))  # the children import doubles
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "good.py").write_text("from doubles.merge import correct as merge_state\n")
    (batch / "nan.py").write_text("from doubles.merge import no_empty_guard as merge_state\n")
    (batch / "wrong.py").write_text("def merge_state(v):\n    return v\n")
    (batch / "dies.py").write_text("import os\n\ndef merge_state(v_a, s_a, v_b, s_b):\n    os._exit(3)\n")
    code, out, err = cli("grade", str(batch), "--op", "merge_state", "--device", "cpu", "--budget", "30", "-j", "2",
                         "--out-dir", str(tmp_path / "out"))
    assert code == 1 and "grade --op merge_state: 4 candidates" in err
    records = {json.loads(line)["candidate"].rpartition("/")[2]: json.loads(line)
               for line in (tmp_path / "out" / "grade-merge_state.jsonl").read_text().splitlines()}
    verdicts = {name: (record["verdict"], record["check"]) for name, record in records.items()}
    assert verdicts == {"good.py": ("pass", None), "nan.py": ("fail", "empty_identity"),
                        "wrong.py": ("load_error", None), "dies.py": ("crash", None)}, verdicts
    assert "exited with status 3" in records["dies.py"]["report"]
