"""The runner finds each broken double by fuzzing, shrinks it, saves a reproducer that replays,
classifies errors, and gives the same result for the same seed."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import doubles
import pytest
import torch
from doubles import exp2, lanes, reads_past, reads_unwritten, two_pass

import lse_fuzz
import reference
from fuzz.checks import CHECKS, run_checks
from fuzz.layouts import LayoutKind
from fuzz.reproducer import load_reproducer
from fuzz.outcomes import HarnessError, Status
from fuzz.recipes import row_values


@pytest.fixture
def run(tmp_path):
    def run(impl, **options):
        options.setdefault("reproducer_dir", tmp_path / "reproducers")
        return lse_fuzz.check(impl, **options)

    return run


@pytest.mark.parametrize("impl", doubles.CORRECT.values(), ids=doubles.CORRECT.keys())
def test_correct_torch_implementations_pass(run, impl):
    result = run(impl, budget=150, seed=5)
    assert result.passed, result.summary()
    assert result.examples == 150 and result.failure is None and result.reproducer is None


@pytest.mark.parametrize("impl", [two_pass.lse, exp2.lse, lanes.lse], ids=["two_pass", "exp2", "lanes"])
def test_correct_triton_kernels_written_differently_pass(run, impl):
    result = run(impl, budget=40, seed=2)
    assert result.passed, result.summary()


# (check, double): fuzzing that check alone finds the double, as the mutation harness runs it.
ALONE = [
    ("output_contract", doubles.float64_output),
    ("output_contract", doubles.column_output),
    ("input_unchanged", doubles.negates_input),
    ("input_unchanged", doubles.canonicalizes_zeros),
    ("agreement", doubles.nan_for_neg_inf_rows),
    ("agreement", doubles.off_by_max),
    ("agreement", doubles.hardcoded_row_stride),
    ("bounds", doubles.off_by_max),
    ("determinism", doubles.alternates_rounding),
    ("shift_invariance", doubles.off_by_max),
    ("permutation_invariance", doubles.first_entry_shift),
    ("row_independence", doubles.batch_max_shift),
    ("fresh_values", doubles.caches_by_object),
    ("fresh_values", doubles.caches_by_shape),
    ("memory_bounds", reads_past.lse),
    ("uninitialized_read", reads_unwritten.lse),
]


def test_every_check_is_fuzzed_against_a_double():
    assert {check for check, _ in ALONE} == set(CHECKS)


@pytest.mark.parametrize(("check", "impl"), ALONE, ids=[f"{c}-{f.__name__}" for c, f in ALONE])
def test_each_check_alone_finds_its_double(run, check, impl):
    doubles._shape_cache.clear()
    result = run(impl, checks=[check], budget=200, seed=0)
    assert result.status is Status.FAILED, result.summary()
    assert result.check == check
    assert result.reproducer is not None and result.reproducer.is_file()
    assert f"lse-fuzz replay {result.reproducer} --impl {impl.__module__}:{impl.__name__}" in result.summary()


# Doubles with one defect that only one check sees: a run of all checks names that check.
TARGETED = [
    ("output_contract", doubles.float64_output),
    ("input_unchanged", doubles.negates_input),
    ("input_unchanged", doubles.canonicalizes_zeros),
    ("agreement", doubles.nan_for_neg_inf_rows),
    ("determinism", doubles.alternates_rounding),
    ("fresh_values", doubles.caches_by_object),
]


@pytest.mark.parametrize(("check", "impl"), TARGETED, ids=[f"{c}-{f.__name__}" for c, f in TARGETED])
def test_all_checks_report_the_one_that_fails(run, check, impl):
    result = run(impl, budget=300, seed=0)
    assert result.check == check, result.summary()


def test_the_counterexample_is_shrunk_to_the_smallest_input(run):
    result = run(doubles.off_by_max, seed=0)
    example = result.counterexample
    assert example.shape == (1, 1)
    assert example.dtype == torch.float32
    assert example.layout.kind is LayoutKind.CONTIGUOUS
    assert len(example.specs) == 1


def test_the_counterexample_is_the_input_as_generated_not_as_the_candidate_left_it(run):
    result = run(doubles.negates_input, checks=["input_unchanged"], seed=0)
    assert result.check == "input_unchanged"
    example = result.counterexample
    assert torch.equal(example.x.cpu().contiguous().view(torch.uint8), example.values.view(torch.uint8))
    # so the counterexample passes a correct implementation as it is handed back
    run_checks(doubles.lse_float64, example, checks=["agreement"], plan=result.plan)


def test_the_same_seed_gives_the_same_result(run):
    first, second = (run(doubles.first_entry_shift, seed=11).to_dict() for _ in range(2))
    for data in (first, second):
        data.pop("seconds"), data.pop("examples_per_second"), data["costs"].pop("seconds")
    assert first == second  # the cost counters too: a budget on them is a deterministic test
    assert first["status"] == "failed"


def test_a_passing_run_is_reproducible_too(run):
    a, b = (run(doubles.lse_float64, budget=30, seed=3) for _ in range(2))
    assert a.passed and b.passed and a.examples == b.examples == 30


def test_the_run_keeps_the_largest_2d_input_it_drew(run):
    seen = []

    def lse(x):
        seen.append(x)
        return doubles.lse_float64(x)

    result = run(lse, budget=30, seed=3, checks=["agreement"])
    drawn = [x for x in seen if x.dim() == 2 and x.storage_offset() < 2**31]
    largest = result.largest
    assert largest is not None and largest["shape"][0] * largest["shape"][1] == max(x.numel() for x in drawn)
    assert result.to_dict()["largest"] == largest and set(largest) == {"shape", "dtype", "layout", "description"}


def test_an_exception_from_the_implementation_is_status_error(run):
    result = run(doubles.raises_on_long_rows)
    assert result.status is Status.ERROR and not result.passed
    assert result.check is None
    assert "RuntimeError: row too long: 5 > 4" in result.error
    assert result.counterexample.shape[1] == 5  # shrunk to the shortest row that raises
    assert "the implementation raised" in result.summary()
    assert result.reproducer is not None


def test_a_kept_failure_holds_no_frames(run):
    # Hypothesis keeps every failure it meets while shrinking; a traceback's frames would keep the
    # example's tensors (gigabytes for a huge-offset input on a GPU) alive with it.
    result = run(doubles.off_by_max, checks=["agreement"], budget=50, seed=0)
    assert result.status is Status.FAILED
    failure = result.failure
    assert failure.__traceback__ is None and failure.__context__ is None and failure.__cause__ is None
    error = run(doubles.raises_on_long_rows).failure
    assert error.__traceback__ is None and error.__context__ is None
    assert "RuntimeError: row too long" in error.text  # the implementation's traceback, kept as text


def harness_fails(x):
    raise HarnessError("the GPU stayed full")


def test_a_harness_error_ends_the_run_without_a_verdict(run):
    # Not the implementation's error (no ImplError, no shrinking): the run stops at the first example.
    calls = []

    def impl(x):
        calls.append(1)
        harness_fails(x)

    with pytest.raises(HarnessError, match="the GPU stayed full"):
        run(impl, budget=50)
    assert len(calls) == 1


def test_a_failure_that_does_not_reproduce_is_reported_not_lost(run):
    doubles._calls = itertools.count()
    result = run(doubles.wrong_every_fifth_call, checks=["agreement"], budget=100)
    assert not result.passed
    assert result.status in (Status.FLAKY, Status.FAILED)
    if result.status is Status.FLAKY:
        assert "did not reproduce" in result.summary()


def test_replay_runs_the_saved_example_again(run):
    result = run(doubles.batch_max_shift, checks=["row_independence"], seed=4)
    assert result.check == "row_independence"
    replayed = lse_fuzz.replay(result.reproducer, doubles.batch_max_shift)
    assert replayed.check == "row_independence" and replayed.examples == 1
    assert replayed.failure.row == result.failure.row
    assert replayed.counterexample.x.stride() == result.counterexample.x.stride()
    assert torch.equal(replayed.counterexample.values.view(torch.uint8), result.counterexample.values.view(torch.uint8))
    assert f"lse-fuzz replay {result.reproducer} --impl doubles:batch_max_shift" in replayed.failure.message()
    assert lse_fuzz.replay(result.reproducer, doubles.lse_float64).passed


def test_the_reproducer_is_plain_data(run):
    result = run(doubles.off_by_max, checks=["bounds"])
    data = torch.load(result.reproducer, weights_only=True)
    assert data["format"] == "lse-fuzz-reproducer/1"
    assert data["check"] == "bounds" and data["checks"] == ["bounds"]
    assert data["layout"]["kind"] == "contiguous"


def test_to_dict_is_json(run):
    for impl in (doubles.off_by_max, doubles.raises_on_long_rows, doubles.lse_float64):
        data = json.loads(json.dumps(run(impl, budget=20).to_dict()))
        assert data["status"] in {status.value for status in Status}


def test_the_contract_switch_keeps_nan_and_pos_inf_out(run):
    def refuses_non_finite(x):
        if torch.isnan(x).any() or (x == float("inf")).any():
            raise ValueError("non-finite input")
        return doubles.lse_float64(x)

    assert run(refuses_non_finite, contract="finite", budget=150).passed
    assert run(refuses_non_finite, contract="strict", budget=150).status is Status.ERROR


def test_a_database_keeps_the_failure(run, tmp_path):
    database = tmp_path / "db"
    result = run(doubles.off_by_max, database=database, checks=["bounds"])
    assert result.check == "bounds"
    assert any(database.rglob("*"))


BAD_OPTIONS = {
    "budget_zero": (dict(budget=0), "budget=0; expected an int >= 1."),
    "seed_negative": (dict(seed=-1), "seed=-1; expected an int >= 0."),
    "contract_unknown": (dict(contract="loose"), "contract='loose'; expected 'strict'"),
    "check_unknown": (dict(checks=["agreemnt"]), "unknown 'agreemnt'; choose from output_contract"),
    "profile_unknown": (dict(profile="fast"), "profile='fast'; expected one of lse-ci, lse-thorough, lse-gpu."),
    "device_unknown": (dict(device="tpu"), "device='tpu'; expected auto, cpu, cuda or cuda:N."),
    "database_wrong_type": (dict(database=3), "database=3; expected a directory path"),
    "max_elements_zero": (dict(max_elements=0), "max_elements=0; expected an int >= 1."),
}


@pytest.mark.parametrize("case", BAD_OPTIONS)
def test_bad_options_raise_invalid_argument_naming_the_value(case):
    options, text = BAD_OPTIONS[case]
    with pytest.raises(lse_fuzz.InvalidArgument) as info:
        lse_fuzz.check(doubles.lse_float64, **options)
    assert text in str(info.value)


def test_a_non_callable_impl_is_refused():
    with pytest.raises(lse_fuzz.InvalidArgument, match="impl=3 is not callable"):
        lse_fuzz.check(3)


def test_replay_of_a_missing_file_is_refused(tmp_path):
    with pytest.raises(lse_fuzz.InvalidArgument, match="no such reproducer file"):
        lse_fuzz.replay(tmp_path / "missing.pt", doubles.lse_float64)


@pytest.mark.slow
def test_speed_on_the_interpreter(run):
    started = time.perf_counter()
    result = run(reference.lse, budget=200, seed=0)
    seconds = time.perf_counter() - started
    assert result.passed, result.summary()
    assert result.examples >= 200 and seconds <= 60, f"{result.examples} examples in {seconds:.1f} s"


@pytest.mark.slow
def test_huge_offsets_with_the_reference_kernel(run):
    result = run(reference.lse, huge_offsets=True, budget=60, seed=1, max_elements=4096)
    assert result.passed, result.summary()


CRASHING_RUN = """
import sys
import lse_fuzz
from doubles import int32_index
result = lse_fuzz.check(int32_index.lse, huge_offsets=True, budget=100, seed=1, max_elements=4096,
                        checks=["agreement"], reproducer_dir=sys.argv[1])
print(result.status.value, result.check)
"""


def test_a_huge_offset_crash_leaves_the_input_that_caused_it(tmp_path):
    # 32-bit index math wraps past 2**31 elements: the kernel reads far outside the input, which
    # on a CPU usually kills the process. The runner saved the example before running it.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), str(Path(__file__).parents[1] / "implementations")])}
    done = subprocess.run([sys.executable, "-c", CRASHING_RUN, str(tmp_path)], env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode == 0:  # the wild reads happened to land in mapped memory
        assert done.stdout.split()[0] in {"failed", "error"}, done.stdout
        return
    pending = list(tmp_path.glob("lse-fuzz-pending-crash-*.pt"))
    assert len(pending) == 1, done.stderr
    pending = pending[0]
    example = load_reproducer(pending).example()
    assert example.layout.is_huge


def test_runs_sharing_a_directory_keep_their_own_pending_file(tmp_path, monkeypatch):
    # A mutation gate fuzzes the reference and the mutants' base side by side, on the same examples,
    # into one directory: one shared pending name made one run's rename fail under the other's.
    from hypothesis import find

    from fuzz import run as runner
    from fuzz.checks import Plan
    from fuzz.contract import Contract
    from fuzz.strategies import lse_inputs

    example = find(lse_inputs(max_elements=64), lambda e: True)
    plan = Plan(metamorphic=None, seed=0)
    paths = []
    for pid in (101, 102):
        monkeypatch.setattr(runner.os, "getpid", lambda pid=pid: pid)
        paths.append(runner._save_pending(example, plan, ("agreement",), Contract(), tmp_path))
    assert [p.name for p in paths] == ["lse-fuzz-pending-crash-101.pt", "lse-fuzz-pending-crash-102.pt"]
    assert all(p.is_file() for p in paths)
    assert load_reproducer(paths[0]).example().shape == example.shape


# --------------------------------------------------------------------------------------------
# A construct the CPU cannot run: no verdict on this device, never the kernel's failure

HERE = Path(__file__).resolve().parents[1] / "implementations"
INLINE_ASM = f"{HERE / 'candidates' / 'inline_asm.py'}:lse"


def test_a_kernel_the_cpu_cannot_run_is_unsupported_naming_the_construct(run, tmp_path):
    result = run(lse_fuzz.load_target(INLINE_ASM), budget=20, target=INLINE_ASM)
    assert result.status is Status.UNSUPPORTED and not result.passed and result.check is None
    assert result.examples == 1  # the first example that used it ends the run
    summary = result.summary()
    assert summary.startswith(f"UNSUPPORTED {INLINE_ASM}: no verdict on the CPU")
    assert ("UNSUPPORTED on the CPU: the kernel uses tl.inline_asm_elementwise, which the CPU's emulation of Triton "
            "cannot run as a GPU does (inline GPU assembly has no CPU meaning); run with --device cuda for a verdict"
            ) in summary
    # The example is kept, to replay where it can run: on a GPU.
    assert result.failure.replay == f"lse-fuzz replay {result.reproducer} --impl {INLINE_ASM} --device cuda"
    report = result.to_dict()
    assert report["status"] == "unsupported" and report["error"] is None
    assert report["failure"]["construct"] == "tl.inline_asm_elementwise"
    again = lse_fuzz.replay(result.reproducer, lse_fuzz.load_target(INLINE_ASM), target=INLINE_ASM)
    assert again.status is Status.UNSUPPORTED and again.failure.replay.endswith("--device cuda")


def test_a_candidate_that_raises_the_refusal_itself_is_an_error(run):
    target = f"{HERE / 'hostile' / 'claims_unsupported.py'}:lse"
    result = run(lse_fuzz.load_target(target), budget=5, target=target)
    assert result.status is Status.ERROR, result.summary()
    assert "EmulationUnsupported raised by the implementation" in result.summary()


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")  # reject() outside a test
def test_a_failure_found_first_wins_over_a_construct_met_while_shrinking(tmp_path):
    """Before any failure, an example the CPU cannot run ends the run (unsupported); once a failure
    is found, such an example is no instance of it: Hypothesis drops it and shrinks on."""
    from hypothesis.errors import UnsatisfiedAssumption

    from fuzz.checks import Plan
    from fuzz.run import Run, Tuning, _Refused
    from fuzz.strategies import Contract, overflow_example

    impl = lse_fuzz.load_target(INLINE_ASM)
    example = overflow_example(Contract.STRICT, torch.device("cpu"))
    fuzz_run = Run(impl, tuple(CHECKS), Contract.STRICT, INLINE_ASM, tmp_path, None, Tuning(), None, None)
    with pytest.raises(_Refused) as refused:
        fuzz_run.one(example, Plan("shift_invariance"))
    assert refused.value.found.failure.construct == "tl.inline_asm_elementwise"
    fuzz_run.state.last = refused.value.found  # as if a check had failed on an earlier example
    with pytest.raises(UnsatisfiedAssumption):
        fuzz_run.one(example, Plan("shift_invariance"))


def _inputs_seen(**options) -> list[tuple]:
    """Every input an implementation was called with in one run, as (shape, dtype, stride, bits)."""
    seen = []

    def recording(x: torch.Tensor) -> torch.Tensor:
        seen.append((tuple(x.shape), str(x.dtype), x.stride(), hash(x.contiguous().view(-1).tolist().__repr__())))
        return torch.logsumexp(x.double(), dim=1).to(x.dtype) if x.dtype != torch.float64 else torch.logsumexp(x, 1)

    result = lse_fuzz.check(recording, budget=40, seed=3, device="cpu", huge_offsets=False, **options)
    assert result.status is Status.PASSED, result.report()
    return seen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_32_bit_offsets_fail_on_every_seed_within_a_small_budget(run, seed):
    """Every run ends with two views past 2**31 elements (strategies.huge_examples), inside the budget."""
    from doubles import int32_index

    result = run(int32_index.lse_int32_columns, budget=4, seed=seed, max_elements=4096)
    assert result.check == "memory_bounds" and result.examples <= 4, result.summary()
    assert result.counterexample.layout.kind is LayoutKind.HUGE_COLUMN_STRIDE
    assert run(int32_index.lse_int32_columns, budget=4, seed=seed, max_elements=4096, huge_offsets=False).passed


def test_the_shares_of_a_run_run_its_examples_exactly_once():
    """share=(k, K): K jobs run one run's examples between them (the mutation gate spreads its
    compiles over a GPU host's cores so), each example in exactly one share, each launch class
    (dtype, N's power of two) in one share only, the last examples (the padded rows, the float16
    overflow row) included, each in its group's share."""
    whole = _inputs_seen()
    shares = [_inputs_seen(share=(k, 3)) for k in range(3)]
    assert sorted(sum(shares, [])) == sorted(whole)
    assert all(0 < len(share) < len(whole) for share in shares)
    classes = [{(dtype, shape[1] and 1 << (shape[1] - 1).bit_length()) for shape, dtype, _, _ in share}
               for share in shares]
    assert not (classes[0] & classes[1]) and not (classes[1] & classes[2]) and not (classes[0] & classes[2])
    last = whole[-1]
    assert last[0] == (1, 65520) and sum(share[-1] == last for share in shares) == 1
    # Not all in share 0 (which was the gate's tail on a GPU when it ran every last example).
    assert any(x[0] in ((1, 65520), (3, 5)) for share in shares[1:] for x in share)


def test_a_share_builds_the_tensors_of_its_own_examples_only(monkeypatch):
    """Every share draws the whole stream; the examples of the others are skipped unbuilt (their
    values and views cost a GPU host's share seconds of drawing otherwise)."""
    import fuzz.lse_input

    built = []
    monkeypatch.setattr(fuzz.lse_input, "row_values", lambda *args: built.append(args) or row_values(*args))

    def examples(**options) -> int:
        built.clear()
        result = lse_fuzz.check(lambda x: torch.logsumexp(x.double(), 1).to(x.dtype), budget=40, seed=3,
                                device="cpu", huge_offsets=False, **options)
        assert result.status is Status.PASSED, result.report()
        return result.costs.examples

    assert examples() == len(built) == 40  # the whole run builds each example it runs, once
    for k in (1, 2):
        assert 0 < examples(share=(k, 3)) == len(built) < 40


@pytest.mark.parametrize("share", [(3, 3), (-1, 2), (0, 0)])
def test_a_share_outside_its_run_is_refused(share):
    with pytest.raises(reference.InvalidArgument, match=r"share\["):
        lse_fuzz.check(torch.logsumexp, share=share, device="cpu")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("impl", "check"), [(doubles.writes_padding, "input_unchanged"),
                                             (doubles.caches_by_object, "fresh_values")], ids=["padding", "cache"])
def test_padding_writes_and_cached_answers_fail_on_every_seed_within_a_small_budget(run, seed, impl, check):
    """Every run ends with padded rows (strategies.padded_example), inside the budget, checked by
    fresh_values: a write into the caller's padding and an answer cached by object show on every seed."""
    from fuzz.contract import Contract

    result = run(impl, budget=3, seed=seed, max_elements=4096, huge_offsets=False)
    assert result.check == check and result.examples <= 3, result.summary()
    if impl is doubles.writes_padding:
        assert run(impl, budget=3, seed=seed, contract=Contract(layouts="contiguous")).passed


def test_a_gpu_too_full_for_the_fixed_examples_is_the_harness_s_error(monkeypatch):
    # Other processes hold the GPU's memory for longer than the wait: no verdict and no traceback.
    from fuzz import gpu_memory, runner
    from fuzz.strategies import Contract

    clock = iter(itertools.count(step=30.0))
    monkeypatch.setattr(gpu_memory, "time", type("Clock", (), {"monotonic": staticmethod(lambda: next(clock)),
                                                                "sleep": staticmethod(lambda seconds: None)}))
    made = []

    def full(contract, device):
        made.append(1)
        raise RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported")

    monkeypatch.setattr(runner, "padded_example", full)
    with pytest.raises(HarnessError, match="no room for the fuzzer's own fixed examples.*Run fewer jobs"):
        runner._last_examples(Contract.parse("strict"), torch.device("cuda", 0), False, default_shapes=True, budget=9)
    assert len(made) > 1  # tried again while the wait lasted
