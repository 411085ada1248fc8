"""The isolated worker: inputs travel bit for bit, outputs come back as they were returned, and
every way a call can end (return, raise, crash, exit, hang, out of memory, noise) is classified.

Workers are forked from a zygote that has torch imported, so each costs a fraction of a second;
the zygote itself (about 2 s) starts once per test process.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pytest
import torch

import fuzz
import lse_fuzz
from fuzz import defaults
from fuzz.gpu_memory import MEMORY_WAIT
from fuzz.isolation import CandidateRaised, IsolatedImpl, LoadFailed, worker_environment
from fuzz.isolation.worker.codec import ReturnedObject
from fuzz.outcomes import HarnessError, ImplLost, Outcome
from fuzz.layouts import Layout, LayoutKind
from reference.errors import InvalidArgument

CANDIDATES = Path(__file__).resolve().parents[3] / "implementations" / "candidates"
HOSTILE = CANDIDATES.parent / "hostile"  # attacks on the harness itself, kept out of the graded set


def target(name: str, function: str = "lse") -> str:
    folder = HOSTILE if (HOSTILE / f"{name}.py").exists() else CANDIDATES
    return f"{folder / name}.py:{function}"


def expected(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)


@pytest.fixture(scope="module")
def correct():
    with IsolatedImpl(target("torch_float64")) as impl:
        yield impl


# --------------------------------------------------------------------------------------------
# The worker's environment


def test_worker_environment_keeps_what_python_torch_and_cuda_need_and_drops_the_rest():
    env = worker_environment({
        "PATH": "/usr/bin", "HOME": "/home/u", "TRITON_CACHE_DIR": "/cache", "CUDA_VISIBLE_DEVICES": "1",
        "LD_LIBRARY_PATH": "/cuda/lib", "AWS_SECRET_ACCESS_KEY": "s3cret", "GITHUB_TOKEN": "ghp_x",
        "HTTPS_PROXY": "http://proxy", "PYTHONPATH": "/extra",
    })
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/home/u"
    assert env["TRITON_CACHE_DIR"] == "/cache" and env["CUDA_VISIBLE_DEVICES"] == "1"
    assert env["LD_LIBRARY_PATH"] == "/cuda/lib"
    assert not {"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "HTTPS_PROXY"} & set(env)
    assert str(Path(fuzz.__file__).resolve().parent.parent) == env["PYTHONPATH"].split(os.pathsep)[0]
    assert env["PYTHONHASHSEED"] == "0"


def test_the_worker_runs_scrubbed_in_its_own_directory_session_and_stdin(monkeypatch):
    monkeypatch.setenv("LSE_FUZZ_TEST_SECRET", "do-not-leak")
    with IsolatedImpl(target("env_probe")) as impl:
        impl(torch.zeros(2, 3))
        seen = json.loads(impl.noise().stdout_head.splitlines()[0])
    assert "LSE_FUZZ_TEST_SECRET" not in seen["env"]
    assert set(seen["env"]) <= set(worker_environment()) | {"TMPDIR", "TEMP", "TMP", "TRITON_INTERPRET",
                                                         "CUDA_VISIBLE_DEVICES"}
    assert Path(seen["cwd"]).resolve() != Path.cwd().resolve() and Path(seen["cwd"]).name == "cwd"
    assert seen["stdin"] == ""  # /dev/null
    assert seen["pgid_is_pid"]  # its own session: the terminal's Ctrl-C does not reach it
    assert seen["triton_interpret"] == "1"  # CPU tensors need Triton's interpreter


def test_a_candidate_looking_for_its_grader_finds_an_ordinary_python_process():
    x = torch.randn(3, 4)
    with IsolatedImpl(target("behaves_when_watched")) as impl:
        out = impl(x)
        with open(f"/proc/{impl.pid}/cmdline", "rb") as f:
            assert f.read().rstrip(b"\0") == b"python3"  # what ps shows too
    # It computes honestly only when it sees the grader: here it took its shortcut.
    assert torch.equal(out, torch.zeros(3))


# --------------------------------------------------------------------------------------------
# Inputs and outputs cross the boundary exactly

LAYOUTS = [Layout(), Layout(LayoutKind.PADDED, pad=3), Layout(LayoutKind.TRANSPOSED, pad=2),
           Layout(LayoutKind.COLUMN_STEP, step=3, pad=1), Layout(LayoutKind.OFFSET, offset=17)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.kind.value)
def test_strided_inputs_arrive_with_their_values_strides_and_offset(correct, layout, dtype):
    values = torch.randn(5, 7, dtype=torch.float64).to(dtype)
    values[1, 2] = -math.inf
    x = layout.materialize(values)
    out = correct(x)
    assert torch.equal(out, expected(x))
    assert out.dtype == expected(x).dtype and out.shape == (5,)


def test_huge_offset_inputs_travel_as_their_view_and_stay_lazily_allocated():
    x = Layout(LayoutKind.HUGE_OFFSET).materialize(torch.randn(3, 4))
    assert x.untyped_storage().nbytes() > 2**31
    with IsolatedImpl(target("torch_float64"), memory_limit=0) as impl:
        assert torch.equal(impl(x), expected(x))


@pytest.mark.parametrize("shape", [(3, 4), (0, 8), (5, 0)])
@pytest.mark.parametrize("kind", [LayoutKind.HUGE_OFFSET, LayoutKind.HUGE_COLUMN_STRIDE], ids=lambda k: k.value)
def test_huge_views_of_any_shape_travel_and_come_back_unchanged(kind, shape):
    # An empty view with a column stride far from 1 once broke the worker's own input check.
    x = Layout(kind).materialize(torch.randn(shape))
    with IsolatedImpl(target("torch_float64"), memory_limit=0) as impl:
        assert torch.equal(impl(x), expected(x))
        assert impl.input_changes == 0


def test_an_interpreted_kernel_meets_one_huge_input_after_another_within_the_address_space_limit():
    # The interpreter's launches leave cycles that hold a huge storage: the worker collects them
    # before it builds the next one, or the second lands beside the first past the limit.
    with IsolatedImpl("reference:lse") as impl:
        for kind in (LayoutKind.HUGE_OFFSET, LayoutKind.HUGE_COLUMN_STRIDE, LayoutKind.HUGE_OFFSET):
            values = torch.randn(3, 5)
            out = impl(Layout(kind).materialize(values))
            assert torch.allclose(out, torch.logsumexp(values, dim=1))


def test_what_the_worker_holds_before_its_first_call_is_out_of_the_cycle_collectors_sight(tmp_path):
    # The worker collects cycles before each huge input (a launch's cycles hold the last one): with
    # torch, Triton and the candidate's module frozen, such a collection scans only what calls made.
    evidence = tmp_path / "evidence"
    (tmp_path / "counts.py").write_text(
        "import gc\nimport torch\n\nMADE_AT_IMPORT = [None]\n\n"
        "def lse(x):\n"
        "    seen = any(o is MADE_AT_IMPORT for o in gc.get_objects())  # the permanent generation excluded\n"
        f"    with open({str(evidence)!r}, 'w') as f:\n"
        "        f.write(f'{gc.get_freeze_count()} {seen}')\n"
        "    return torch.logsumexp(x.double(), dim=1).float()\n")
    with IsolatedImpl(f"{tmp_path / 'counts.py'}:lse") as impl:
        impl(torch.randn(2, 3))
    frozen, seen = evidence.read_text().split()
    assert int(frozen) > 10_000, f"{frozen} objects frozen: torch alone makes more than 10,000"
    assert seen == "False", "the candidate's module is still scanned by every full collection"


def test_empty_inputs_travel(correct):
    assert correct(torch.empty(0, 5)).shape == (0,)
    assert torch.equal(correct(torch.empty(3, 0)), torch.full((3,), -math.inf))


def test_a_mutation_of_the_input_is_written_back_bit_for_bit():
    x = torch.tensor([[0.0, 1.5], [-2.0, math.nan]])
    before = x.clone()
    with IsolatedImpl(target("mutates_input")) as impl:
        impl(x)
        assert impl.input_changes == 1  # counted on every call, not only those the checks inspect
    assert torch.equal(x.view(torch.int32), (-before).view(torch.int32))  # 0.0 became -0.0


def test_the_parent_sees_an_input_change_that_the_candidate_hides_from_its_own_process():
    x = torch.tensor([[0.5, 1.5], [-2.0, 4.0]])
    before = x.clone()
    with IsolatedImpl(target("blinds_the_input_check")) as impl:
        impl(x)
        assert impl.input_changes == 1
        impl(x)  # the same tensor again: its (halved) contents travel, and the next change is seen too
        assert impl.input_changes == 2
    assert torch.equal(x, before / 4)


def test_a_write_into_the_padding_is_written_back():
    x = Layout(LayoutKind.PADDED, pad=2).materialize(torch.ones(2, 3))
    storage = torch.empty(0).set_(x.untyped_storage())
    assert storage[3].isnan()  # poison between the rows
    with IsolatedImpl(target("writes_padding")) as impl:
        impl(x)
    assert storage[3] == 0  # the worker's write reached the caller's storage
    assert torch.equal(x, torch.ones(2, 3))  # the view itself is untouched


def test_an_output_that_aliases_the_input_comes_back_as_a_view_of_it():
    x = torch.randn(4, 3)
    with IsolatedImpl(target("aliases_input")) as impl:
        out = impl(x)
    assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert torch.equal(out, x[:, 0])


def test_an_output_that_aliases_the_input_through_another_storage_object_comes_back_as_a_view_of_it():
    x = torch.randn(4, 3)
    with IsolatedImpl(target("aliases_through_numpy")) as impl:
        out = impl(x)
    assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert torch.equal(out, x[:, -1]) and out.stride() == (3,)


def test_an_output_the_candidate_returns_again_and_overwrites_changes_in_the_callers_hands():
    x = torch.randn(3, 4)
    with IsolatedImpl(target("returns_one_buffer")) as impl:
        first = impl(x)
        second = impl(x + 1.0)
        assert torch.equal(first, second)  # as in process, where both are one tensor
        assert impl.output_changes == 1  # decided here, from the bytes of the held output
        del first, second
        third = impl(x)  # released outputs are not sent again: nothing held changed
        assert impl.output_changes == 1 and torch.equal(third, expected(x))


def test_the_same_tensor_object_maps_to_the_same_object_in_the_worker():
    x = torch.randn(3, 4)
    with IsolatedImpl(target("caches_by_object")) as impl:
        first = impl(x)
        x.copy_(torch.randn(3, 4))  # what the fresh_values check does
        assert torch.equal(impl(x), first)  # the object cache in the worker was hit: stale
        assert torch.equal(impl(x.clone()), expected(x))  # a new object gets a new answer


def test_returned_outputs_are_poisoned_so_unwritten_rows_cannot_reuse_a_stale_answer():
    x = torch.randn(4, 6)
    with IsolatedImpl(target("skips_last_row")) as impl:
        impl.uninitialized_read = False  # the values the row ends up with, as a GPU returns them
        impl(x)
        second = impl(x)
    assert not torch.equal(second[-1], expected(x)[-1])


def test_on_the_cpu_the_worker_refuses_a_result_with_rows_nothing_wrote():
    with IsolatedImpl(target("skips_last_row")) as impl:
        with pytest.raises(CandidateRaised) as info:
            impl(torch.randn(4, 6))
    assert type(info.value).__name__ == "UninitializedRead"
    assert info.value.memory is not None and info.value.memory.check == "uninitialized_read"
    assert info.value.memory.where.startswith("the result[3] was never written since torch.empty at skips_last_row.py:")


@pytest.mark.parametrize(("name", "type_name", "check"), [
    ("wrong_type", "list", lambda out: isinstance(out, ReturnedObject)),
    ("wrong_shape", "Tensor", lambda out: out.shape == (2, 1)),
    ("wrong_dtype", "Tensor", lambda out: out.dtype == torch.float64),
    ("wrong_device", "Tensor", lambda out: out.device.type == "meta"),
], ids=["type", "shape", "dtype", "device"])
def test_wrong_outputs_come_back_as_they_were_returned(name, type_name, check):
    with IsolatedImpl(target(name)) as impl:
        out = impl(torch.randn(2, 3))
    assert type(out).__name__ == type_name and check(out)


# --------------------------------------------------------------------------------------------
# Raising, printing: the worker lives on


def test_an_exception_comes_back_with_its_type_message_and_traceback_and_the_worker_survives():
    with IsolatedImpl(target("raises")) as impl:
        with pytest.raises(CandidateRaised) as info:
            impl(torch.zeros(1, 5))
        assert torch.equal(impl(torch.zeros(1, 3)), expected(torch.zeros(1, 3)))  # same worker
        pid = impl.pid
    error = info.value
    assert type(error).__name__ == "RuntimeError" and str(error) == "row too long: 5 > 4"
    assert isinstance(error, Exception)  # the runner reports it as the implementation's error
    assert "raises.py\", line 8, in lse" in error.traceback_text
    assert any("traceback in the isolated worker" in note for note in error.__notes__)
    assert pid is not None


GPU_OTHERS_FILL = """
import torch

# The worker's GPU as eight jobs side by side left it: 79 of 80 GiB held by other processes.
torch.cuda.is_available = lambda: True
torch.cuda.is_initialized = lambda: True
torch.cuda.mem_get_info = lambda device=None: (1 << 30, 80 << 30)
torch.cuda.memory_reserved = lambda device=None: 0


def lse(x):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 MiB.")
"""


def test_an_out_of_memory_on_a_gpu_others_fill_is_no_verdict_on_the_candidate(tmp_path):
    # Measured on an H100: a correct autotuned kernel graded "crash: out of memory" that way.
    (tmp_path / "gpu_full.py").write_text(GPU_OTHERS_FILL)
    with IsolatedImpl(f"{tmp_path / 'gpu_full.py'}:lse") as impl:
        with pytest.raises(HarnessError, match="CUDA out of memory.*other processes held the GPU's memory"):
            impl(torch.zeros(1, 5))


def test_noise_is_captured_and_reported_not_mixed_into_our_output(capfd):
    with IsolatedImpl(target("noisy")) as impl:
        out = impl(torch.randn(2, 3))
        noise = impl.noise()
    assert out.shape == (2,)
    assert noise.stdout_head.startswith("lse called on (2, 3)") and noise.stderr_head.startswith("debug")
    assert "bytes to stdout" in noise.describe() and "bytes to stderr" in noise.describe()
    captured = capfd.readouterr()
    assert "lse called" not in captured.out and "debug" not in captured.err


# --------------------------------------------------------------------------------------------
# Crashes, exits, hangs, out of memory: the worker is lost and the run must stop

LOST = [
    ("segfault", {}, Outcome.CRASHED, "SIGSEGV"),
    ("aborts", {}, Outcome.CRASHED, "SIGABRT"),
    ("os_exit", {}, Outcome.EXITED, "exited with code 7"),
    ("sys_exit", {}, Outcome.EXITED, "called sys.exit(3)"),
    # It sleeps: idle in the 2 s after the first deadline, a hang then (fuzz.isolation.worker.idle); the
    # window is measured (2.01 s on a loaded machine), so its length is left out here.
    ("hang", {"call_timeout": 1.0}, Outcome.TIMEOUT, "s after it the worker's processes used 0 s of CPU, every "
     "thread waiting"),
    ("hang", {"timeout": 1.0}, Outcome.TIMEOUT, "time budget of 1 s ran out"),
    ("memory_hog", {"memory_limit": 4 << 30}, Outcome.OUT_OF_MEMORY, "can't allocate memory"),
    ("lifts_memory_limit", {"memory_limit": 1 << 30}, Outcome.OUT_OF_MEMORY, "can't allocate memory"),
    ("floods_the_grader", {}, Outcome.CRASHED, "bytes while call 1 on a (2, 3) float32 input, more than any answer"),
    # A resource limit is named, with its value: not a failure of the candidate's (an OSError), not an unknown signal.
    ("memory_hog", {"memory_limit": 4 << 30}, Outcome.OUT_OF_MEMORY,
     "the worker exceeded the address-space limit of 22 GiB (the candidate's memory limit of 4 GiB, --memory-limit"),
    ("prints_past_the_file_limit", {}, Outcome.FILE_SIZE_LIMIT,
     "the worker exceeded the output-file-size limit of 256 MiB (it printed past it"),
    ("exceeds_its_cpu_time_limit", {}, Outcome.CPU_TIME_LIMIT,
     "the worker exceeded the CPU-time limit (one the candidate set itself: the grader sets none; killed by SIGXCPU)"),
]


@pytest.mark.parametrize(("name", "options", "outcome", "text"), LOST,
                         ids=["segfault", "abort", "os_exit", "sys_exit", "hang", "time_budget", "out_of_memory",
                              "out_of_memory_after_lifting_the_limit", "an_answer_larger_than_any_result",
                              "address_space_limit", "file_size_limit", "cpu_time_limit"])
def test_a_lost_worker_is_classified_and_stays_lost(name, options, outcome, text):
    x = torch.randn(2, 3)
    impl = IsolatedImpl(target(name), **options).start()
    pid = impl.pid
    with pytest.raises(ImplLost) as info:
        impl(x)
    lost = info.value
    assert not isinstance(lost, Exception)  # neither the runner nor Hypothesis may swallow it
    assert lost.outcome is outcome and text in lost.detail, lost.detail
    assert lost.input is x and lost.call == 1
    with pytest.raises(ImplLost) as again:
        impl(x)  # no second worker, no second wait
    assert again.value is lost
    impl.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_import_that_hangs_costs_the_load_deadline_of_a_call():
    # A load is judged as a call at its first deadline (compiling not counted), not given 120 s: a
    # correct candidate loads in seconds at most. On a GPU the CUDA context's wait for room is added.
    assert IsolatedImpl(target("hangs_on_import")).load_timeout == defaults.CALL_TIMEOUT == 60.0
    assert IsolatedImpl(target("hangs_on_import"), device="cuda").load_timeout == 60.0 + MEMORY_WAIT
    impl = IsolatedImpl(target("hangs_on_import"), load_timeout=1.0)
    with pytest.raises(ImplLost) as info:
        impl.start()
    assert info.value.outcome is Outcome.TIMEOUT and "no answer within 1 s while loading the target" in info.value.detail


def test_a_segfault_report_carries_the_candidate_frame():
    with IsolatedImpl(target("segfault")) as impl, pytest.raises(ImplLost) as info:
        impl(torch.zeros(1, 1))
    assert "Fatal Python error: Segmentation fault" in info.value.stderr
    assert "segfault.py\", line 7 in lse" in info.value.stderr


def test_a_crash_stops_the_fuzz_run_at_once_without_shrinking(tmp_path):
    impl = IsolatedImpl(target("segfault")).start()
    with pytest.raises(ImplLost):
        lse_fuzz.check(impl, budget=50, reproducer_dir=tmp_path, target=impl.target)
    assert impl.calls == 1
    impl.close()


def test_an_isolated_correct_kernel_passes_the_fuzz_run(tmp_path):
    with IsolatedImpl(target("triton_two_pass")) as impl:
        result = lse_fuzz.check(impl, budget=8, seed=1, reproducer_dir=tmp_path, target=impl.target)
    assert result.passed, result.summary()


# --------------------------------------------------------------------------------------------
# Targets that cannot be used

LOAD_FAILURES = [
    (target("import_error"), "ModuleNotFoundError: No module named 'triton_lse_helpers_that_do_not_exist'"),
    (target("missing_function"), "has no attribute 'lse'"),
    (target("wrong_signature"), "lse(x: torch.Tensor, dim: int) -> torch.Tensor cannot be called as lse(x)"),
    (target("exits_on_import"), "importing it called sys.exit('no GPU, giving up')"),
    (target("triton_two_pass", "_two_pass_kernel"), "_two_pass_kernel is a @triton.jit kernel"),
    ("no_such_package.kernels:lse", "cannot import 'no_such_package.kernels'"),
]


@pytest.mark.parametrize(("spec", "text"), LOAD_FAILURES,
                         ids=["import_error", "missing_function", "wrong_signature", "exits_on_import",
                              "kernel_not_launcher", "missing_module"])
def test_a_target_that_cannot_be_loaded_fails_with_one_line(spec, text):
    with pytest.raises(LoadFailed) as info:
        IsolatedImpl(spec).start()
    message = str(info.value)
    assert isinstance(info.value, InvalidArgument)
    assert text in message and "\n" not in message and message.startswith("target=")


def test_a_module_target_resolves_in_the_worker_as_it_does_here():
    with IsolatedImpl("candidates.torch_float64:lse") as impl:  # tests/implementations is on sys.path here
        x = torch.randn(2, 3)
        assert torch.equal(impl(x), expected(x))


def test_close_kills_the_worker_and_removes_its_directory():
    impl = IsolatedImpl(target("torch_float64")).start()
    pid, home = impl.pid, impl._home
    impl.close()
    assert not home.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_bench_times_whole_requests_and_returns_the_last_output():
    with IsolatedImpl(target("torch_float64")) as impl:
        seconds, out = impl.bench(shape=(16, 64), dtype=torch.float32, seed=5, min_seconds=0.02, repeats=2)
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(16, 64, generator=generator)
    assert 0 < seconds < 1 and torch.equal(out, expected(x))  # the same seeded input as the grader's


def test_bench_of_a_candidate_that_skips_the_work_returns_its_time():
    # It answers the benchmark's input from a cache: tens of thousands of calls per round, whose
    # summed call timeouts (with no time budget) once overflowed the wait and errored the benchmark
    # (so impossible_speed never fired on it).
    with IsolatedImpl(target("skips_work_when_timed"), call_timeout=60.0, timeout=None) as impl:
        seconds, out = impl.bench(shape=(4096, 4097), dtype=torch.float32, seed=5, min_seconds=0.05, repeats=2)
    assert 0 < seconds < 1e-4 and out.shape == (4096,)


def test_a_process_the_candidate_detaches_does_not_outlive_its_worker(tmp_path):
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    source = (HOSTILE / "detaches.py").read_text().replace("EVIDENCE = None", f"EVIDENCE = {str(evidence)!r}")
    (tmp_path / "detaches.py").write_text(source)
    with IsolatedImpl(f"{tmp_path / 'detaches.py'}:lse") as impl:
        impl(torch.randn(2, 3))
        deadline = time.monotonic() + 10
        while not (evidence / "daemon.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int((evidence / "daemon.pid").read_text())
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the detached process is still running while its worker is"
    beats = (evidence / "heartbeat").stat().st_size if (evidence / "heartbeat").exists() else 0
    time.sleep(0.3)
    assert ((evidence / "heartbeat").stat().st_size if (evidence / "heartbeat").exists() else 0) == beats


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_the_address_space_limit_counts_above_what_the_worker_maps_already():
    # torch, Triton and their libraries are mapped before the candidate runs: 0.8 GiB of address
    # space with a CPU build of torch, gigabytes with a CUDA one. Counted inside the limit, they left
    # a `--device cpu` worker on a GPU host no room for a huge-offset input.
    from fuzz.isolation.environment import INPUT_RESERVE

    impl = IsolatedImpl(target("torch_float64"), memory_limit=1 << 30).start()
    try:
        limits = Path(f"/proc/{impl.pid}/limits").read_text()
        status = Path(f"/proc/{impl.pid}/status").read_text()
    finally:
        impl.close()
    line = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    limit = int(line.split()[3])
    mapped = int(next(l for l in status.splitlines() if l.startswith("VmSize:")).split()[1]) * 1024
    baseline = limit - (1 << 30) - INPUT_RESERVE
    assert 100 << 20 < baseline <= mapped, (baseline, mapped)
