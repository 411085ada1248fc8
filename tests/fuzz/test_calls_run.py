"""N-D implementations through the runner, the reproducer, replay and the CLI (fuzz.calls, fuzz.batching)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import nd_buggy
from fuzz.calls import CallConvention, ConventionError
from fuzz.runner import check, replay
from fuzz.target import load_target

CORRECT = Path(__file__).resolve().parents[1] / "implementations" / "correct"
MIDDLE = CallConvention(ndim=3, dim=1, args="x,dim,keepdim")


def _check(impl, call, tmp_path, budget=40, **options):
    return check(impl, budget=budget, seed=0, device="cpu", call=call, huge_offsets=False,
                 reproducer_dir=tmp_path, **options)


@pytest.mark.parametrize(("file", "call"), [
    ("nd_torch_dim.py", MIDDLE),
    ("nd_tuple_result.py", CallConvention(ndim=3, dim=0, args="x,dim", result=1)),
    ("nd_keepdim_object.py", CallConvention(ndim=4, dim=-2, keepdim=True, result="lse")),
    ("nd_middle_dim_triton.py", CallConvention(ndim=3, dim=1)),
])
def test_correct_nd_members_pass(file, call, tmp_path):
    result = _check(load_target(str(CORRECT / file)), call, tmp_path, budget=25)
    assert result.passed, result.summary()


def test_a_1d_input_is_one_row(tmp_path):
    result = _check(lambda x, dim: torch.logsumexp(x.double(), dim=dim).float(), CallConvention(ndim=1, dim=0, args="x,dim"),
                    tmp_path)
    assert result.passed, result.summary()


@pytest.mark.parametrize(("impl", "call", "check_name"), [
    (nd_buggy.reduces_wrong_dim, MIDDLE, "output_contract"),
    (nd_buggy.ignores_batch_stride, MIDDLE, "agreement"),
    (nd_buggy.ignores_keepdim, CallConvention(ndim=3, dim=1, keepdim=True, args="x,dim,keepdim"), "output_contract"),
    (nd_buggy.lse_first, CallConvention(ndim=3, dim=1, args="x,dim", result=1), "agreement"),
])
def test_nd_bugs_are_caught_by_a_named_check(impl, call, check_name, tmp_path):
    result = _check(impl, call, tmp_path, budget=100)
    assert not result.passed and result.check == check_name, result.summary()


def test_a_failure_replays_with_its_layout_and_the_line_carries_the_options(tmp_path):
    result = _check(nd_buggy.ignores_batch_stride, MIDDLE, tmp_path, budget=100)
    assert "--ndim 3 --dim 1 --call-args x,dim,keepdim" in result.failure.replay
    assert result.counterexample.batch is not None
    again = replay(result.reproducer, nd_buggy.ignores_batch_stride)
    assert again.check == "agreement"
    assert again.counterexample.batch == result.counterexample.batch
    assert replay(result.reproducer, load_target(str(CORRECT / "nd_torch_dim.py"))).passed


def test_a_result_of_another_structure_raises_for_an_api_user(tmp_path):
    with pytest.raises(ConventionError, match="pass --result"):
        _check(nd_buggy.lse_first, CallConvention(ndim=3, dim=1, args="x,dim"), tmp_path)


def test_the_default_call_is_unchanged(tmp_path):
    result = check(lambda x: torch.logsumexp(x.double(), dim=1).float(), budget=10, seed=0, device="cpu",
                   huge_offsets=False, reproducer_dir=tmp_path)
    assert result.passed and "call" not in result.contract.to_dict()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "fuzz", "check", *args, "--device", "cpu", "--parts", "1"],
                          capture_output=True, text=True, timeout=300)


def test_cli_dim_out_of_range_is_one_line_and_exit_2():
    done = _cli(str(CORRECT / "nd_torch_dim.py"), "--ndim", "3", "--dim", "3")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "lse-fuzz: error: dim=3 is out of range for 3-D inputs (ndim=3): expected -3 <= dim <= 2; pass such a "
        "--dim, or the input's rank as --ndim."]


def test_cli_wrong_structure_is_exit_2_and_a_declared_one_passes(tmp_path):
    file = str(CORRECT / "nd_tuple_result.py")
    done = _cli(file, "--ndim", "3", "--dim", "0", "--call-args", "x,dim", "--budget", "5", "--reproducers",
                str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("lse-fuzz: error: the implementation returned a tuple of 2")
    done = _cli(file, "--ndim", "3", "--dim", "0", "--call-args", "x,dim", "--result", "1", "--budget", "8",
                "--reproducers", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_cli_an_isolated_nd_bug_is_caught_by_its_check(tmp_path):
    buggy = str(Path(nd_buggy.__file__)) + ":ignores_keepdim"
    done = _cli(buggy, "--ndim", "3", "--dim", "1", "--keepdim", "--call-args", "x,dim,keepdim", "--budget", "20",
                "--reproducers", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "check 'output_contract' failed: returned shape" in done.stdout
    assert "--ndim 3 --dim 1 --keepdim --call-args x,dim,keepdim" in done.stdout  # the replay line


def test_cli_replay_takes_the_options_of_its_line_and_refuses_others(tmp_path):
    result = _check(nd_buggy.ignores_batch_stride, MIDDLE, tmp_path, budget=100)
    line = result.failure.replay.split()
    target = str(Path(nd_buggy.__file__)) + ":ignores_batch_stride"
    options = line[line.index("--ndim"):]
    done = subprocess.run([sys.executable, "-m", "fuzz", "replay", str(result.reproducer), "--impl", target,
                           *options], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "check 'agreement' failed" in done.stdout, done.stdout + done.stderr
    done = subprocess.run([sys.executable, "-m", "fuzz", "replay", str(result.reproducer), "--impl", target,
                           "--ndim", "3", "--dim", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "lse-fuzz: error: --ndim 3 --dim 2: the file was found with --ndim 3 --dim 1 --call-args x,dim,keepdim; "
        "give those, or none."]
