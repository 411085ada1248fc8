"""bench/agreement.py's own logic: records, resume, and the comparison of two devices' verdicts.

No fuzz run here: the records are synthetic or parsed from Stryker reports of real runs (tests/bench/data/).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"  # Stryker reports of real runs (2026-11-30, CPU), kept as test data


def _load():
    spec = importlib.util.spec_from_file_location("agreement", ROOT / "bench" / "agreement.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["agreement"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


agreement = _load()


def corpus(item: str, seed: int, verdict: str = "pass", check: str | None = None) -> dict:
    return {"part": "corpus", "target": f"tests/implementations/correct/{item}", "item": item, "seed": seed,
            "verdict": verdict, "check": check, "reason": "", "input": None}


def kernel(path: str, seed: int, verdict: str = "pass", check: str | None = None) -> dict:
    return {"part": "kernels", "target": path, "item": "/".join(path.split("/")[-2:]), "seed": seed,
            "verdict": verdict, "check": check, "reason": "", "input": None}


def mutant(item: str, seed: int, status: str, check: str | None = None, part: str = "mutants") -> dict:
    return {"part": part, "target": "mutants", "item": item, "seed": seed, "status": status, "check": check,
            "reason": f"{status} reason", "input": None, "again": None}


# --- the comparison --------------------------------------------------------------------------------

def test_agreeing_devices_agree_on_every_pair():
    left = [corpus("a.py", 0), corpus("a.py", 1), mutant("m", 0, "Killed", "agreement")]
    found = agreement.compare(left, [dict(r) for r in left])
    assert len(found["agree"]) == 3 and not found["differ"] and not found["one_sided"]
    assert not found["check_differs"] and not found["status_differs"]


@pytest.mark.parametrize(("cpu", "gpu", "agree"), [
    (("Killed", "agreement"), ("Timeout", None), True),  # Stryker: a Timeout is detected
    (("Killed", "agreement"), ("Survived", None), False),
    (("RuntimeError", None), ("Survived", None), True),  # neither detected: same class, another status
    (("NoCoverage", None), ("Survived", None), True),
    (("Killed", "agreement"), ("CompileError", None), False),  # an invalid mutant is not detected
    (("Timeout", None), ("NoCoverage", None), False),
], ids=["killed-timeout", "killed-survived", "runtime_error-survived", "no_coverage-survived",
        "killed-compile_error", "timeout-no_coverage"])
def test_a_mutant_is_detected_when_killed_or_timed_out(cpu, gpu, agree):
    found = agreement.compare([mutant("m", 0, *cpu)], [mutant("m", 0, *gpu)])
    assert (len(found["agree"]), len(found["differ"])) == ((1, 0) if agree else (0, 1))
    if agree and cpu[0] != gpu[0] and "Killed" not in (cpu[0], gpu[0]):
        assert len(found["status_differs"]) == 1


def test_a_corpus_run_fails_on_any_verdict_but_pass():
    left = [corpus("a.py", 0), corpus("a.py", 1, "fail", "agreement"), corpus("a.py", 2, "crash")]
    right = [corpus("a.py", 0, "fail", "bounds"), corpus("a.py", 1, "timeout"), corpus("a.py", 2, "error")]
    found = agreement.compare(left, right)
    assert [pair[1] for pair in found["differ"]] == [0]
    assert [pair[1] for pair in found["agree"]] == [1, 2]


def test_another_implementation_agrees_only_on_the_same_verdict():
    asm, buggy = "tests/implementations/candidates/inline_asm.py", "tests/implementations/candidates/buggy_no_max.py"
    left = [kernel(asm, 0, "unsupported"), kernel(buggy, 0, "fail", "agreement"), kernel(buggy, 1, "fail", "bounds"),
            kernel(buggy, 2, "error")]
    right = [kernel(asm, 0, "pass"), kernel(buggy, 0, "fail", "agreement"), kernel(buggy, 1, "fail", "agreement"),
             kernel(buggy, 2, "crash")]
    found = agreement.compare(left, right)
    assert sorted((p[0][2], p[1]) for p in found["differ"]) == [("candidates/buggy_no_max.py", 2),
                                                               ("candidates/inline_asm.py", 0)]
    assert [(p[0][2], p[1]) for p in found["check_differs"]] == [("candidates/buggy_no_max.py", 1)]
    rows = {key[2]: (a, b) for key, a, b in found["rows"]}
    assert agreement.cell("kernels", rows["candidates/buggy_no_max.py"][0]) == \
        "2/3 fail, 1/3 error · agreement 1, bounds 1"


def test_every_other_implementation_is_a_file_and_declares_its_contract_beside_it():
    campaign = importlib.util.spec_from_file_location("campaign", ROOT / "bench" / "campaign.py")
    module = importlib.util.module_from_spec(campaign)
    campaign.loader.exec_module(module)
    for path in agreement.KERNELS:
        assert (ROOT / path).is_file(), path
    declared = {path: module.declared_contract(ROOT / path) for path in agreement.KERNELS}
    assert all(declared[p] == {"backward": True} for p in agreement.KERNELS if "/backward/" in p)
    assert declared["examples/real_world/te_cross_entropy.py"] == {
        "contract": "finite", "dtypes": "float32,bfloat16", "output_dtype": "float32"}


def test_a_different_killing_check_agrees_and_is_reported_apart():
    found = agreement.compare([mutant("m", 0, "Killed", "agreement")], [mutant("m", 0, "Killed", "bounds")])
    assert len(found["agree"]) == 1 and len(found["check_differs"]) == 1 and not found["differ"]


def test_seeds_run_on_one_device_only_are_neither_agreement_nor_difference():
    left = [mutant("m", 0, "Killed", "agreement"), mutant("m", 1, "Killed", "agreement")]
    found = agreement.compare(left, [mutant("m", 0, "Survived"), mutant("only_gpu", 0, "Killed", "bounds")])
    assert [(p[0][2], p[1]) for p in found["differ"]] == [("m", 0)]
    assert sorted((p[0][2], p[1]) for p in found["one_sided"]) == [("m", 1), ("only_gpu", 0)]
    rows = {key[2]: (left_seeds, right_seeds) for key, left_seeds, right_seeds in found["rows"]}
    assert agreement.agree_cell(*rows["m"]) == "**no** 0/1 (+1 on one device)"
    assert agreement.agree_cell(*rows["only_gpu"]) == "- (+1 on one device)"
    assert agreement._one_sided_lines(found["one_sided"], ("CPU", "H200")) == [
        "- mutants `m`: seed 1 on the CPU only", "- mutants `only_gpu`: seed 0 on the H200 only"]


def test_a_later_record_of_the_same_run_replaces_the_earlier():
    found = agreement.compare([mutant("m", 0, "Survived"), mutant("m", 0, "Killed", "agreement")],
                              [mutant("m", 0, "Killed", "agreement")])
    assert len(found["agree"]) == 1 and not found["differ"]


def test_cells_count_seeds_statuses_and_checks():
    records = {seed: mutant("m", seed, "Killed", "agreement") for seed in range(3)}
    records[3] = mutant("m", 3, "Survived")
    assert agreement.cell("mutants", records) == "3/4 detected · Killed 3, Survived 1 · agreement 3"
    assert agreement.cell("corpus", {0: corpus("a.py", 0), 1: corpus("a.py", 1)}) == "2/2 pass"
    assert agreement.cell("corpus", {0: corpus("a.py", 0), 1: corpus("a.py", 1, "fail", "bounds")}) == \
        "1/2 pass · pass 1, fail 1 · bounds 1"
    assert agreement.cell("mutants", {}) == "-"


def _write_run(folder: Path, device_name: str, records: list[dict], budgets: dict | None = None) -> Path:
    folder.mkdir()
    header = {"device": "cpu" if device_name == "CPU" else "cuda", "budgets": budgets or agreement.DEFAULT_BUDGETS,
              "sessions": [{"started": "2026-12-01 10:00 UTC", "machine": f"2026-12-01, {device_name}",
                            "device_name": device_name, "commit": "abc1234", "modified": []}]}
    (folder / "header.json").write_text(json.dumps(header))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_compare_writes_the_summary_the_table_and_each_difference(tmp_path, capsys):
    cpu = _write_run(tmp_path / "cpu", "CPU", [
        corpus("a.py", 0), corpus("a.py", 1), mutant("m", 0, "Killed", "agreement"), mutant("m", 1, "Survived"),
        mutant("mask_off_by_one@k.py:45:21", 0, "RuntimeError", part="mutate"),
        {"part": "run", "of": "mutants", "target": "mutants", "seed": 1, "exit": 2, "command": "python -m fuzz mutants"}])
    gpu = _write_run(tmp_path / "gpu", "NVIDIA H200", [
        corpus("a.py", 0), corpus("a.py", 1), mutant("m", 0, "Killed", "bounds"), mutant("m", 1, "Killed", "agreement"),
        mutant("mask_off_by_one@k.py:45:21", 0, "Survived", part="mutate")],
        budgets={**agreement.DEFAULT_BUDGETS, "corpus": 200})
    out = tmp_path / "agreement.md"
    assert agreement.main(["compare", str(cpu), str(gpu), "--out", str(out)]) == 0
    text = out.read_text()
    summary = ("**3 items (1 corpus implementations, 0 other implementations, 1 bundled mutants, 1 `mutate` mutants) x 2 seeds (0..1): "
               "5 pairs on both devices, 4 agree, 1 differ; 0 on one device only; the killing check differs in "
               "1 agreeing pairs.**")
    assert summary in text and summary in capsys.readouterr().out
    assert "| part | item | CPU | NVIDIA H200 | agree | killing check differs |" in text
    assert "| mutants | `m` | 1/2 detected · Killed 1, Survived 1 · agreement 1 | " \
           "2/2 detected · Killed 2 · bounds 1, agreement 1 | **no** 1/2 | 1 |" in text
    assert "- mutants `m` seed 1: CPU **Survived** (Survived reason) / NVIDIA H200 **Killed** by `agreement`" in text
    assert "## Same class, another status (information) (1)" in text and "CPU **RuntimeError**" in text
    assert "the budgets differ" in text
    assert "- CPU: mutants seed 1 mutants exited 2: `python -m fuzz mutants`" in text


def test_compare_names_a_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(SystemExit, match="header.json is missing"):
        agreement.main(["compare", str(tmp_path), str(tmp_path), "--out", str(tmp_path / "x.md")])


# --- records ---------------------------------------------------------------------------------------

def test_mutate_records_come_from_a_real_mutation_json():
    report = json.loads((DATA / "cpu-mutate-exp2_based.json").read_text())
    records = agreement.mutant_records(report)
    assert len(records) == 32
    assert {r["status"] for r in records} == {"Killed", "Survived", "NoCoverage", "RuntimeError"}
    killed = next(r for r in records if r["item"] == "row_stride_as_length@exp2_based.py:48:40")
    assert killed["check"] == "agreement" and killed["file"] == "tests/implementations/correct/exp2_based.py"
    assert killed["reason"] == "check 'agreement' failed: row 1 differs from the float64 reference"
    assert killed["input"] == "float32 (2, 1) padded(strides=(2, 1)) on cpu; rows: 2 x zeros"
    survivor = next(r for r in records if r["status"] == "Survived")
    assert survivor["check"] is None and survivor["input"] is None and survivor["again"] == "thorough"
    assert all("\n" not in r["reason"] for r in records)


def test_bundled_mutant_records_come_from_a_real_mutation_json():
    report = json.loads((DATA / "cpu-mutation.json").read_text())
    records = {r["item"]: r for r in agreement.mutant_records(report)}
    assert len(records) == 17 and {r["status"] for r in records.values()} == {"Killed"}
    assert records["no_max_added"]["check"] == "shift_invariance"
    assert records["no_max_added"]["input"] == "float32 (1, 1) contiguous on cpu; rows: 1 x zeros"


def test_a_minimal_stryker_report_and_a_status_outside_the_vocabulary():
    report = {"files": {"k.py": {"mutants": [
        {"id": "fill_value_zero@k.py:3:4", "status": "Timeout", "statusReason": "stopped after 90 s", "duration": 1500},
    ]}}, "config": {"retried_after_timeout": ["fill_value_zero@k.py:3:4"]}}
    [record] = agreement.mutant_records(report)
    assert record == {"item": "fill_value_zero@k.py:3:4", "file": "k.py", "status": "Timeout", "check": None,
                      "examples": None, "seconds": 1.5, "reason": "stopped after 90 s", "input": None,
                      "again": "after timeout"}
    report["files"]["k.py"]["mutants"][0]["status"] = "Flaky"
    with pytest.raises(ValueError, match="Flaky"):
        agreement.mutant_records(report)


def test_a_campaign_record_keeps_no_machine_path():
    failure = {"target": f"{ROOT}/tests/implementations/correct/two_pass.py:lse", "seed": 3, "verdict": "fail",
               "check": "agreement", "examples": 17, "seconds": 4.2, "reason": "check 'agreement' failed: row 0",
               "details": "check 'agreement' failed: row 0\n  input:    float16 (1, 3) contiguous on cpu\n"
                          "  replay:   lse-fuzz replay /tmp/x/reproducers/r.pt"}
    record = agreement.file_record(failure, "corpus")
    assert record == {"target": "tests/implementations/correct/two_pass.py", "item": "two_pass.py",
                      "verdict": "fail", "check": "agreement", "examples": 17, "seconds": 4.2,
                      "reason": "check 'agreement' failed: row 0", "input": "float16 (1, 3) contiguous on cpu"}
    passed = agreement.file_record({**failure, "verdict": "pass", "check": None}, "corpus")
    assert passed["reason"] == "" and passed["input"] is None
    assert agreement.file_record(failure, "kernels")["item"] == "correct/two_pass.py"  # names repeat there


# --- budgets and commands --------------------------------------------------------------------------

def test_budgets_default_and_override():
    assert agreement.parse_budgets("") == agreement.DEFAULT_BUDGETS
    assert agreement.parse_budgets("corpus=50, thorough=0,mutate-max-elements=2048") == {
        **agreement.DEFAULT_BUDGETS, "corpus": 50, "thorough": 0, "mutate_max_elements": 2048}


@pytest.mark.parametrize("text", ["corpuss=5", "corpus=0", "mutate=-1", "corpus", "mutants=ten"])
def test_a_bad_budget_names_the_keys(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected KEY=N, KEY among corpus, kernels, mutants, mutate"):
        agreement.parse_budgets(text)


def test_the_devices_run_the_same_commands_but_for_the_device():
    budgets = agreement.DEFAULT_BUDGETS
    for unit in agreement.plan(list(agreement.PARTS), range(1)):
        cpu = agreement.Setup("cpu", budgets, 2).command(unit, "DIR", ["a.py"])
        cuda = agreement.Setup("cuda", budgets, 2).command(unit, "DIR", ["a.py"])
        assert [a for a, b in zip(cpu, cuda) if a != b] == ["cpu"] and len(cpu) == len(cuda)
        assert "--parts" in cpu or unit.part == "mutate"
    mutate = agreement.Setup("cpu", budgets, 2).command(agreement.Unit("mutate", "k.py", 4), "DIR")
    assert mutate[:5] == ["python", "-m", "fuzz", "mutate", "k.py"]
    assert {"--no-cache", "--seed", "4", "--thorough-budget", str(budgets["thorough"]),
            "--max-elements", str(budgets["mutate_max_elements"])} <= set(mutate)


def test_the_plan_goes_seed_by_seed():
    units = agreement.plan(["corpus", "mutate"], range(2, 4))
    assert [(u.part, u.seed) for u in units] == [("corpus", 2)] + [("mutate", 2)] * 3 + [("corpus", 3)] + \
        [("mutate", 3)] * 3


# --- resume ----------------------------------------------------------------------------------------

def test_done_keys_skip_corpus_runs_and_judged_commands_but_not_a_failed_gate_or_a_crash():
    records = [corpus("a.py", 0),
               {"part": "run", "of": "mutate", "target": "k.py", "seed": 0, "exit": 0},
               {"part": "run", "of": "mutate", "target": "k.py", "seed": 1, "exit": 1},  # a traceback
               {"part": "run", "of": "mutants", "target": "mutants", "seed": 0, "exit": 2},
               {"part": "run", "of": "mutants", "target": "mutants", "seed": 1, "exit": 1},
               {"part": "run", "of": "corpus", "target": agreement.CORPUS, "seed": 5, "exit": 0}]
    assert agreement.done_keys(records) == {("corpus", "tests/implementations/correct/a.py", 0),
                                            ("mutate", "k.py", 0), ("mutants", "mutants", 1)}
    te = "examples/real_world/te_cross_entropy.py"
    later = [kernel(te, 0, "load_error"), kernel(te, 1, "fail", "agreement")]  # a library missing: run again
    assert agreement.done_keys(later) == {("kernels", te, 1)}


def _everything_done(seed: int) -> list[dict]:
    files = sorted(p.name for p in (ROOT / agreement.CORPUS).glob("*.py"))
    return ([{**corpus(name, seed), "device": "cpu"} for name in files]
            + [{**kernel(path, seed), "device": "cpu"} for path in agreement.KERNELS]
            + [{"device": "cpu", "part": "run", "of": part, "target": target, "seed": seed, "exit": 0}
               for part, target in [("mutants", "mutants")] + [("mutate", t) for t in agreement.MUTATE_TARGETS]])


def test_resume_runs_nothing_recorded_and_a_deadline_starts_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    records = out / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in _everything_done(0)))
    before = records.read_text()
    assert agreement.main(["run", "--device", "cpu", "--out", str(out), "--seeds", "1", "--resume"]) == 0
    assert "0 commands to run" in capsys.readouterr().out and records.read_text() == before
    # Seed 1 is not recorded: its 6 commands are planned, and the deadline starts none of them.
    assert agreement.main(["run", "--device", "cpu", "--out", str(out), "--seeds", "2", "--resume",
                           "--deadline", "0"]) == 3
    assert "6 commands to run" in capsys.readouterr().out and records.read_text() == before
    # --match: one implementation run again (its library installed now), nothing else.
    assert agreement.main(["run", "--device", "cpu", "--out", str(out), "--seeds", "2", "--resume",
                           "--match", "te_cross_entropy", "--deadline", "0"]) == 3
    assert "1 commands to run" in capsys.readouterr().out
    header = json.loads((out / "header.json").read_text())
    assert header["budgets"] == agreement.DEFAULT_BUDGETS and len(header["sessions"]) == 3
    assert header["sessions"][0]["argv"].startswith("python bench/agreement.py run --device cpu --out ")


def test_a_run_refuses_to_overwrite_or_to_resume_with_other_budgets(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "records.jsonl").write_text("")
    with pytest.raises(SystemExit, match="pass --resume"):
        agreement.main(["run", "--device", "cpu", "--out", str(out), "--seeds", "1", "--deadline", "0"])
    assert agreement.main(["run", "--device", "cpu", "--out", str(out), "--seeds", "1", "--resume",
                           "--deadline", "0"]) == 3
    with pytest.raises(SystemExit, match=f"resume with --budget corpus={agreement.DEFAULT_BUDGETS['corpus']},"):
        agreement.main(["run", "--device", "cpu", "--out", str(out), "--resume", "--budget", "corpus=5"])
    with pytest.raises(SystemExit, match="device='cpu', this run 'cuda'"):
        agreement.main(["run", "--device", "cuda", "--out", str(out), "--resume"])


def test_a_command_that_fails_prints_its_tail_and_its_exit_code(tmp_path, capsys):
    log = tmp_path / "log.txt"
    polls = []
    code = agreement._execute(["python", "-c", "import sys; print('the gate failed'); sys.exit(4)"], log, (0,),
                              lambda: polls.append(1))
    assert code == 4 and polls
    printed = capsys.readouterr().out
    assert "exited 4:" in printed and "    the gate failed" in printed
    assert agreement._execute(["python", "-c", "pass"], log, (0,)) == 0 and capsys.readouterr().out == ""
