"""``lse-fuzz mutate`` takes the whole contract: the call convention of an N-D kernel and ``--backward``
for a kernel with a Triton backward. Without them the same mutants cannot be judged (the gate fails,
or the backward kernel never runs); with them they are killed, by the checks that see their bugs."""

from __future__ import annotations

import json
from pathlib import Path

from fuzz.cli import main

ROOT = Path(__file__).resolve().parents[3]
ND_KERNEL = ROOT / "tests" / "implementations" / "correct" / "nd_middle_dim_triton.py"
ND_MUTANTS = ["max_not_added_back@nd_middle_dim_triton.py:51:64", "column_stride_dropped@nd_middle_dim_triton.py:41:29"]
BACKWARD_MUTANTS = ["max_shift_removed@_lse_backward_kernel.py:66:25", "exp2_unscaled@_lse_backward_kernel.py:66:23"]
SMALL = ["--budget", "30", "--thorough-budget", "0", "--no-cache", "--device", "cpu", "-j", "2", "-q"]


def _mutate(target: str, mutants: list[str], extra: list[str], out: Path) -> tuple[int, dict[str, tuple[str, str]]]:
    """Exit code, and mutant -> (status, killing check) from the Stryker report."""
    chosen = [arg for name in mutants for arg in ("--mutant", name)]
    code = main(["mutate", target, *chosen, *SMALL, *extra, "--out-dir", str(out)])
    report = out / "mutation.json"
    if not report.exists():
        return code, {}
    data = json.loads(report.read_text())
    found = {}
    for entry in data["files"].values():
        for mutant in entry["mutants"]:
            found[mutant["id"]] = (mutant["status"], (mutant.get("killedBy") or [""])[0])
    return code, found


def test_an_nd_kernel_is_mutated_under_its_call_convention(tmp_path, capsys):
    code, found = _mutate(f"{ND_KERNEL}:lse", ND_MUTANTS, ["--ndim", "3", "--dim", "1"], tmp_path / "nd")
    assert code == 0, capsys.readouterr().err
    assert {name: status for name, (status, _) in found.items()} == dict.fromkeys(ND_MUTANTS, "Killed")
    assert "on 3-D inputs, reducing dim 1" in json.loads((tmp_path / "nd" / "mutation.json").read_text())["config"]["declared_contract"]


def test_without_its_call_convention_the_gate_fails_on_the_correct_kernel(tmp_path, capsys):
    code, _ = _mutate(f"{ND_KERNEL}:lse", ND_MUTANTS[:1], [], tmp_path / "plain")
    err = capsys.readouterr().err
    assert code == 2 and "expected a 3-D (B, N, C) tensor" in err and "fix the suite" in err


def test_backward_mutants_are_killed_by_the_gradient_checks_with_backward(tmp_path):
    code, found = _mutate("reference:lse_autograd", BACKWARD_MUTANTS, ["--backward"], tmp_path / "bw")
    assert code == 0
    assert found == dict.fromkeys(BACKWARD_MUTANTS, ("Killed", "grad_agreement"))
    config = json.loads((tmp_path / "bw" / "mutation.json").read_text())["config"]
    assert config["backward"] is True


def test_without_backward_the_backward_kernel_never_runs(tmp_path):
    code, found = _mutate("reference:lse_autograd", BACKWARD_MUTANTS[:1], [], tmp_path / "fw")
    assert found == {BACKWARD_MUTANTS[0]: ("NoCoverage", "")}
