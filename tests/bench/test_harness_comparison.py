"""bench/harness_comparison.py and its baselines (bench/_baselines.py): each baseline rejects a broken
implementation and passes a correct one; the table counts what it should; the script runs end to end
on a tiny subset. Torch implementations and small shapes only: no interpreter-heavy run here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import _baselines as baselines  # noqa: E402
from bench import harness_comparison as comparison  # noqa: E402
from bench._baselines import Outcome, Verdict  # noqa: E402

DOUBLES = ROOT / "tests" / "implementations" / "doubles" / "__init__.py"
TINY = {"kernelbench": {"shape": (4, 64)}, "opinfo": {}, "liger_tests": {"shapes": ((2, 2, 8), (1, 3, 300))},
        "fla_tests": {"shapes": ((1, 2, 300),)}}


def torch_lse(x):
    return torch.logsumexp(x, dim=1)


def float64_lse(x):
    """Correct, and more accurate than torch's own 16-bit answer: judged on float32/float64 only below."""
    return torch.logsumexp(x.double(), dim=1).to(x.dtype)


def max_only(x):
    return x.max(dim=1).values


def keeps_dim(x):
    return torch.logsumexp(x, dim=1, keepdim=True)


def raises(x):
    raise RuntimeError("boom")


def ignores_row_stride(x):
    """Reads row i at i * N, as if x were contiguous (fla's logsumexp_fwd, docs/bugs-found.md #4)."""
    return torch.logsumexp(torch.as_strided(x, x.shape, (x.shape[1], 1)), dim=1)


def off_by_a_little(x):
    """0.03 too large: about 0.5% of these answers, inside KernelBench's 1e-2 and fla's 1% relative RMS error,
    far outside Liger's rtol of 1e-6 and assert_close's float32 tolerance."""
    return torch.logsumexp(x, dim=1) + 0.03


def judge(name, lse, dtypes=tuple(baselines.DTYPES)):
    return baselines.BASELINES[name](lse, dtypes, **TINY[name])


@pytest.mark.parametrize("name", list(baselines.BASELINES))
@pytest.mark.parametrize("lse", [torch_lse, float64_lse], ids=["torch", "float64"])
def test_each_baseline_passes_a_correct_implementation(name, lse):
    assert judge(name, lse, ("float32", "float64", "bfloat16")).verdict == Verdict.PASS


@pytest.mark.parametrize("name", list(baselines.BASELINES))
def test_each_baseline_rejects_a_wrong_answer_and_says_where(name):
    outcome = judge(name, max_only)
    assert outcome.verdict == Verdict.FAIL
    assert "(" in outcome.reason and any(word in outcome.reason for word in ("float32", "bfloat16"))


@pytest.mark.parametrize("name", list(baselines.BASELINES))
def test_each_baseline_counts_an_exception_as_a_rejection(name):
    outcome = judge(name, raises)
    assert outcome.verdict == Verdict.ERROR and outcome.reason == "RuntimeError: boom"
    assert outcome.verdict.flags


@pytest.mark.parametrize("name, message", [("kernelbench", "output shape (4, 1), expected (4,)"),
                                           ("liger_tests", "output shape (4, 1)"),
                                           ("fla_tests", "output shape (2, 1)")])
def test_a_wrong_output_shape_fails_the_baselines_that_check_it(name, message):
    outcome = judge(name, keeps_dim)
    assert outcome.verdict == Verdict.FAIL and message in outcome.reason


def test_opinfo_catches_an_ignored_row_stride_that_the_contiguous_inputs_of_the_others_miss():
    outcome = judge("opinfo", ignores_row_stride)
    assert outcome.verdict == Verdict.FAIL and "dim -2" in outcome.reason and "strides (1, 5)" in outcome.reason
    assert all(judge(name, ignores_row_stride).verdict == Verdict.PASS
               for name in ("kernelbench", "liger_tests", "fla_tests"))


def test_a_small_error_is_inside_kernelbench_and_fla_tolerances_and_outside_liger_and_opinfo():
    verdicts = {name: judge(name, off_by_a_little).verdict for name in baselines.BASELINES}
    assert verdicts == {"kernelbench": Verdict.PASS, "opinfo": Verdict.FAIL, "liger_tests": Verdict.FAIL,
                        "fla_tests": Verdict.PASS}


def test_a_baseline_skips_an_implementation_that_accepts_none_of_its_dtypes():
    assert judge("kernelbench", torch_lse, ("float16",)).verdict == Verdict.SKIP
    assert judge("fla_tests", torch_lse, ("float32",)).verdict == Verdict.SKIP
    assert judge("liger_tests", torch_lse, ("float64",)).verdict == Verdict.SKIP
    assert not Verdict.SKIP.flags and not Verdict.PASS.flags


def test_opinfo_samples_follow_sample_inputs_logsumexp():
    samples = list(baselines.opinfo_samples(("float32", "float16")))
    # float32: 3 value ranges x 4 reductions; float16: the default range only
    assert len(samples) == 12 + 4
    whats = [what for what, *_ in samples]
    assert "float32 shape (5, 5) dim -2 values in [1000000.0, 2000000.0]" in whats
    assert not any("float16" in what and "1000" in what for what in whats)
    for _, x, rows, expected in samples:
        assert rows.dim() == 2 and expected.shape == (rows.shape[0],)
        assert torch.equal(torch.logsumexp(rows, 1), expected)


def test_the_implementations_are_the_corpus_the_mutants_and_the_cpu_adapters():
    impls = comparison.implementations()
    groups = {group: [i for i in impls if i.group == group] for group in comparison.GROUPS}
    assert not any(i.name.startswith("nd_") for i in groups["correct"])
    torch_native = next(i for i in groups["correct"] if i.name == "torch_native")
    assert torch_native.fuzz_options == ("--max-n", "65504")
    import mutants

    assert [i.name for i in groups["mutants"]] == list(mutants.NAMES)
    adapters = {i.name: i for i in groups["real-world"]}
    assert set(adapters) == set(comparison.KNOWN_BUGS)  # the CPU ones; FlagGems and quack need a GPU
    liger = adapters["liger_cross_entropy"]
    assert liger.dtypes == ("float32", "float16", "bfloat16") and liger.known_bugs == ("2",)
    assert "--device" not in liger.fuzz_options and "--contract" in liger.fuzz_options


def _row(group, name, known_bugs=(), reason="", **outcomes):
    impl = comparison.Implementation(group, name, f"{name}.py:lse", known_bugs=known_bugs)
    return comparison.Row(impl, {h: Outcome(Verdict(v), reason) for h, v in outcomes.items()})


def test_the_summary_counts_false_alarms_bugs_caught_and_known_bugs():
    rows = [_row("correct", "a", opinfo="fail"), _row("correct", "b", opinfo="pass"),
            _row("mutants", "m1", opinfo="error"), _row("mutants", "m2", opinfo="pass"),
            _row("mutants", "m3", opinfo="skip"),
            _row("real-world", "r1", ("4",), opinfo="fail"), _row("real-world", "r2", (), opinfo="fail"),
            _row("real-world", "r3", ("1",), opinfo="pass")]
    lines = comparison.summary_lines(rows, ["opinfo"])
    assert lines[2].endswith("| 1 of 2 |")        # one false alarm among two correct
    assert lines[3].endswith("| 1 of 2 |")        # one of two judged mutants caught (the skip not judged)
    assert lines[4].endswith("| 1 of 2; 1 other |")


def test_a_mutant_rejected_as_its_unmutated_base_is_not_a_catch():
    gate = _row("correct", comparison.UNMUTATED, reason="float16 sample off", opinfo="fail", kernelbench="pass")
    rows = [gate, _row("mutants", "same", reason="float16 sample off", opinfo="fail", kernelbench="fail"),
            _row("mutants", "other", reason="float32 sample off", opinfo="fail", kernelbench="pass")]
    lines = comparison.summary_lines(rows, ["opinfo", "kernelbench"])
    assert lines[2].endswith("| 1 of 1 | 0 of 1 |")  # the unmutated base is a false alarm of opinfo
    assert lines[3].endswith("| 1 of 2 (rejects the unmutated base) | 1 of 2 |")
    table = "\n".join(comparison.detail_lines(rows, ["opinfo", "kernelbench"]))
    assert "| `mutants/same` | every pass is a miss | fail, as unmutated | **FAIL** |" in table
    assert "| `mutants/other` | every pass is a miss | **FAIL** | pass |" in table


def test_a_reason_given_twice_is_written_once():
    rows = [_row("correct", "a", reason="float16 sample off", opinfo="fail"),
            _row("correct", "b", reason="float16 sample off", opinfo="fail"),
            _row("correct", "c", reason="float32 sample off", opinfo="fail")]
    assert comparison.reason_lines(rows, ["opinfo"]) == [
        "* `correct/a`, opinfo: FAIL: float16 sample off", "* `correct/b`, opinfo: FAIL: the same as `correct/a`",
        "* `correct/c`, opinfo: FAIL: float32 sample off"]


def test_render_writes_the_table_of_saved_runs_a_later_one_winning(tmp_path):
    first = {"command": "python bench/harness_comparison.py --out a.md", "rows": [
        {"implementation": "mutants/max_only",
         "outcomes": {"kernelbench": {"verdict": "pass", "reason": "", "seconds": 1}}},
        {"implementation": "correct/torch_native", "outcomes": {"kernelbench": {"verdict": "pass", "reason": "",
                                                                                "seconds": 1}}}]}
    second = [{"implementation": "mutants/max_only",
               "outcomes": {"kernelbench": {"verdict": "fail", "reason": "off", "seconds": 2}}}]
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    text = comparison.render([tmp_path / "a.json", tmp_path / "b.json"], (4, 8))
    assert "`python bench/harness_comparison.py --render a.json b.json`, of the runs " in text
    assert text.index("`correct/torch_native`") < text.index("`mutants/max_only`")  # the registry's order
    assert "| `mutants/max_only` | every pass is a miss | **FAIL** |" in text and "3 s in all" in text  # 1 + 2 s


def test_an_unknown_baseline_is_one_line_naming_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        comparison.main(["--out", str(tmp_path / "t.md"), "--baselines", "kernelbench,nope"])
    assert stopped.value.code == 2
    assert "unknown nope; choose from kernelbench, opinfo, liger_tests, fla_tests" in capsys.readouterr().err


def test_the_script_writes_the_table_for_a_tiny_subset(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "harness_comparison.py"),
                           "--out", str(tmp_path / "t.md"), "--json", str(tmp_path / "t.json"),
                           "--only", "max_only", "--baselines", "kernelbench",
                           "--kernelbench-shape", "4x64", "--lse-fuzz", "skip"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    table = (tmp_path / "t.md").read_text()
    assert "| mutants | bugs caught (1 mutants, one bug each) | 1 of 1 |" in table
    assert "| `mutants/max_only` | every pass is a miss | **FAIL** |" in table
    records = {r["implementation"]: r for r in json.loads((tmp_path / "t.json").read_text())["rows"]}
    assert records["mutants/max_only"]["outcomes"]["kernelbench"]["verdict"] == "fail"


def test_the_lse_fuzz_column_is_lse_fuzz_checks_verdict():
    impl = comparison.Implementation("mutants", "hardcoded_row_stride", f"{DOUBLES}:hardcoded_row_stride",
                                     ("--budget", "60"))
    row = comparison.Row(impl)
    comparison._run_lse_fuzz(impl, 300, row)
    outcome = row.outcomes[comparison.LSE_FUZZ]
    assert outcome.verdict == Verdict.FAIL and "check 'agreement'" in outcome.reason
