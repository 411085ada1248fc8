"""reference.lse, the correct Triton kernel, against the oracle across its whole contract."""

from __future__ import annotations

import collections
import inspect
import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from reference import InvalidArgument, _lse_combine, _lse_kernel, compare, lse
from reference._device import interpreting
from reference._launch import LaunchConfig, _align, launch_config, needs_int64
from reference._lse_kernel import _launch

INF, NAN = math.inf, math.nan
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def _assert_agrees(x: torch.Tensor, got: torch.Tensor) -> None:
    comparison = compare(x, got)
    row = comparison.first_mismatch()
    assert row is None, (
        f"row {row}: expected {comparison.expected[row].item()!r}, got {comparison.got[row].item()!r}, "
        f"bound {comparison.bound[row].item():.3g}; {comparison.mismatches} rows differ"
    )


@st.composite
def inputs(draw):
    """Shapes, dtypes, layouts and row contents that break kernels (a compact, local menu)."""
    m = draw(st.sampled_from([1, 2, 3, 5, 17, 64, 129]))
    n = draw(st.sampled_from([1, 2, 3, 7, 31, 32, 33, 127, 128, 129, 1000, 4097, 16385, 20000]))
    dtype = draw(st.sampled_from(DTYPES))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**20)))
    scale = draw(st.sampled_from([1e-3, 1.0, 20.0, 1e4]))
    offset = draw(st.sampled_from([0.0, -200.0, 95.0, 1e4]))
    values = torch.randn(m, n, generator=gen, dtype=torch.float64) * scale + offset
    for row in range(m):
        kind = draw(st.sampled_from(["plain", "-inf", "some -inf", "+inf", "nan", "ascending", "dominant"]))
        if kind == "-inf":
            values[row] = -INF
        elif kind == "some -inf":
            values[row, : draw(st.integers(0, n))] = -INF
        elif kind == "+inf":
            values[row, draw(st.integers(0, n - 1))] = INF
        elif kind == "nan":
            values[row, draw(st.integers(0, n - 1))] = NAN
        elif kind == "ascending":
            values[row] = torch.linspace(-50, 50, n, dtype=torch.float64)
        elif kind == "dominant":
            values[row] = -60.0
            values[row, draw(st.integers(0, n - 1))] = 0.0
    values = values.to(dtype)
    layout = draw(st.sampled_from(["contiguous", "transposed", "padded", "column step", "offset"]))
    if layout == "transposed":
        return values.t().contiguous().t()
    if layout == "padded":
        base = torch.full((m, n + 5), NAN, dtype=dtype)
        base[:, :n] = values
        return base[:, :n]
    if layout == "column step":
        base = torch.full((m, 2 * n), NAN, dtype=dtype)
        base[:, ::2] = values
        return base[:, ::2]
    if layout == "offset":
        base = torch.full((m * n + 3,), NAN, dtype=dtype)
        view = base[3:].view(m, n)
        view.copy_(values)
        return view
    return values


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=inputs())
def test_agrees_with_the_oracle(x):
    before = x.clone()
    got = lse(x)
    assert got.shape == (x.shape[0],) and got.device == x.device
    assert got.dtype == (torch.float64 if x.dtype == torch.float64 else torch.float32)
    _assert_agrees(x, got)
    assert torch.equal(_bits(x), _bits(before))


def _bits(t: torch.Tensor) -> torch.Tensor:
    # A dense copy: x.contiguous() returns a (m, 1) view with column stride 2 as it is (contiguous
    # by torch's rule for size-1 dimensions), which cannot be viewed as bytes.
    return torch.empty(t.shape, dtype=t.dtype).copy_(t).view(torch.uint8)


def _config(x, *, block_m, block_n, splits, int64=False):
    rows, cols = x.shape
    cols_per_split = math.ceil(math.ceil(cols / block_n) / splits) * block_n
    return LaunchConfig(
        block_m=block_m, block_n=block_n, splits=math.ceil(cols / cols_per_split),
        cols_per_split=cols_per_split, num_warps=4, num_stages=1, int64=int64,
        row_align=_align(x.stride(0), x.element_size()),
        col_align=_align(math.gcd(cols, cols_per_split), x.element_size()),
        row_blocks=math.ceil(rows / block_m),
    )


@pytest.mark.parametrize("splits", [1, 2, 3, 7], ids=lambda s: f"splits={s}")
@pytest.mark.parametrize("int64", [False, True], ids=["int32", "int64"])
def test_gpu_paths_split_rows_and_loop_tiles(splits, int64):
    """The GPU policy's paths (many loop iterations, split rows + combine) run here with small tiles."""
    torch.manual_seed(splits)
    x = torch.randn(7, 1000) * 30
    x[0] = -INF
    x[1, :700] = -INF  # whole tiles, and whole splits, of -inf before the first finite value
    x[2, 999] = INF
    x[3, 5] = NAN
    x[4] = torch.linspace(-300, 300, 1000)  # the max keeps growing: every tile rescales
    got = _launch(x, _config(x, block_m=2, block_n=64, splits=splits, int64=int64), torch.float32)
    _assert_agrees(x, got)


def test_edge_rows():
    x = torch.tensor([[-INF, -INF, -INF], [INF, -INF, 1.0], [NAN, INF, 1.0], [NAN, -INF, -INF],
                      [1.0, 2.0, 3.0], [INF, INF, 0.0]])
    torch.testing.assert_close(lse(x), torch.logsumexp(x, dim=1), equal_nan=True)


@pytest.mark.parametrize("shape", [(0, 5), (4, 0), (0, 0)])
def test_empty_inputs(shape):
    got = lse(torch.empty(shape))
    assert got.shape == (shape[0],) and got.dtype == torch.float32
    assert (got == -INF).all()


def test_output_is_a_new_tensor():
    x = torch.randn(4, 4)
    got = lse(x)
    assert got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


@pytest.mark.parametrize(
    "bad, message",
    [
        (torch.zeros(3), "x.shape=(3,); expected a 2-D (M, N) tensor"),
        (torch.zeros(2, 2, dtype=torch.int64), "x.dtype=torch.int64; supported dtypes are"),
        ("not a tensor", "x=str object"),
    ],
    ids=["1-D", "int64", "str"],
)
def test_bad_input(bad, message):
    with pytest.raises(InvalidArgument) as info:
        lse(bad)
    assert message in str(info.value)


def test_launch_policy_on_a_gpu():
    """What the H200 measurements chose (bench/results/): multi-row tiles, 4096-wide loops, splits."""
    def cfg(shape, dtype=torch.float32):
        return launch_config(torch.empty(shape, dtype=dtype, device="meta"), interpreter=False, multiprocessors=132)

    short = cfg((1048576, 128))
    assert (short.block_m, short.block_n, short.splits) == (32, 128, 1)
    assert cfg((131072, 1000), torch.bfloat16).block_m == 8
    assert cfg((1024, 131072)).splits == 1
    few_long = cfg((256, 1048576))
    assert few_long.splits == 2 and few_long.cols_per_split * few_long.splits >= 1048576
    assert not cfg((8, 8)).int64
    # 8 warps only where rows fill the 4096-wide tile (with the quarter loads, 4 lost up to 14 points there)
    assert short.num_warps == 4 and cfg((16384, 2048), torch.bfloat16).num_warps == 4
    assert few_long.num_warps == 8 and cfg((8192, 8192), torch.bfloat16).num_warps == 8


INTERPRETER_POLICY = [
    # (N, BLOCK_N, tiles per row, splits): one tile up to 256 columns (a masked tail unless N is a
    # power of two from 4, the narrowest tile: the kernel loads it as four quarters), a loop of 2 or
    # 3 tiles up to 768, a split with a loop in each partial from 769; past 2048 columns the tiles
    # widen so that no row takes more than 8.
    (1, 4, 1, 1),
    (3, 4, 1, 1),
    (256, 256, 1, 1),
    (257, 256, 2, 1),
    (768, 256, 3, 1),
    (769, 256, 4, 2),
    (2048, 256, 8, 4),
    (2049, 512, 5, 2),
    (65536, 8192, 8, 4),
]


@pytest.mark.parametrize(("cols", "block_n", "tiles", "splits"), INTERPRETER_POLICY,
                         ids=[f"N={case[0]}" for case in INTERPRETER_POLICY])
def test_launch_policy_in_the_interpreter(cols, block_n, tiles, splits):
    cfg = launch_config(torch.empty((3, cols), device="meta"), interpreter=True)
    assert (cfg.block_n, math.ceil(cols / cfg.block_n), cfg.splits) == (block_n, tiles, splits)


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 5000), cols=st.integers(1, 2**22))
def test_interpreter_policy_bounds(rows, cols):
    """Every shape gets at most 8 tiles a row, at most 4 partials, and no empty partial."""
    cfg = launch_config(torch.empty((rows, cols), device="meta"), interpreter=True)
    tiles = math.ceil(cols / cfg.block_n)
    assert cfg.block_n == 1 << (cfg.block_n.bit_length() - 1)
    assert cfg.block_n >= min(256, cols) and tiles <= 8
    assert (cfg.splits > 1) == (tiles >= 4) and cfg.splits <= 4
    assert (cfg.splits - 1) * cfg.cols_per_split < cols <= cfg.splits * cfg.cols_per_split
    assert cfg.block_m == 1 or cfg.block_m * cfg.block_n <= 2**16
    assert cfg.grid == (math.ceil(rows / cfg.block_m), cfg.splits)


def _line_of(module, text: str) -> int:
    """The line number of the one source line of ``module`` that reads ``text`` (stripped)."""
    lines = inspect.getsource(module).splitlines()
    found = [number for number, line in enumerate(lines, 1) if line.strip() == text]
    assert len(found) == 1, f"{text!r} is on lines {found} of {module.__name__}"
    return found[0]


LOOP_LOAD = (_lse_kernel, "run_max, run_sum = _tile(run_max, run_sum, row_ptrs, start, col_end, stride_col, BLOCK_N, INT64, False)")
TAIL_LOAD = (_lse_kernel, "run_max, run_sum = _tile(run_max, run_sum, row_ptrs, tail, col_end, stride_col, BLOCK_N, INT64, True)")
COMBINE_SUM = (_lse_combine, "row_sum = tl.sum(part_sum * _rescale(part_max, row_max[:, None]), axis=1)")


def _lines_run(fn, *places) -> dict:
    """How often each (module, line text) ran while ``fn()`` ran.

    Triton's interpreter executes a kernel as Python compiled with the kernel file's name and line
    numbers, so a line tracer sees which kernel lines ran, program by program.
    """
    wanted = {(inspect.getsourcefile(module), _line_of(module, text)): (module, text) for module, text in places}
    counts = collections.Counter()

    def local(frame, event, arg):
        if event == "line" and (frame.f_code.co_filename, frame.f_lineno) in wanted:
            counts[wanted[frame.f_code.co_filename, frame.f_lineno]] += 1
        return local

    files = {file for file, _ in wanted}
    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: local if frame.f_code.co_filename in files else None)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return {place: counts[place] for place in places}


@pytest.mark.skipif(not interpreting(), reason="traces the kernel's Python lines in Triton's interpreter")
@pytest.mark.parametrize(("cols", "loop", "tail", "combine"), [
    pytest.param(200, 0, 1, 0, id="N=200: one masked tile"),
    pytest.param(256, 1, 0, 0, id="N=256: one full tile, through the loop"),
    pytest.param(600, 2, 1, 0, id="N=600: a loop of two full tiles, then the tail"),
    pytest.param(1024, 4, 0, 1, id="N=1024: two partials of two full tiles, then the combine"),
    pytest.param(1000, 3, 1, 1, id="N=1000: partials of 2 tiles and of 1 tile + tail, then the combine"),
])
def test_loops_tails_and_splits_run_in_the_interpreter(cols, loop, tail, combine):
    """reference.lse itself, on a CPU, takes the loop, the tail and the split-row combine for the N
    the interpreter policy sends there (one row, so each count is of one row's tiles)."""
    torch.manual_seed(cols)
    x = torch.randn(1, cols) * 5
    out = []
    ran = _lines_run(lambda: out.append(lse(x)), LOOP_LOAD, TAIL_LOAD, COMBINE_SUM)
    assert (ran[LOOP_LOAD], ran[TAIL_LOAD], ran[COMBINE_SUM]) == (loop, tail, combine)
    _assert_agrees(x, out[0])


def test_int64_is_chosen_from_the_largest_offset():
    def view(shape, strides):
        return torch.empty_strided(shape, strides, device="meta")

    assert not needs_int64(view((3, 4), (2**29, 1)))
    assert needs_int64(view((3, 4), (2**30, 1)))
    assert needs_int64(view((4, 3), (1, 2**30)))


HUGE_OFFSET_SCRIPT = textwrap.dedent(
    """
    import torch, reference
    # Lazily allocated: torch.empty touches no memory until the view's few elements are written.
    base = torch.empty(2**32 + 2**20, dtype=torch.float16)
    x = base.as_strided((3, 100), (2**30 + 8, 1), storage_offset=2**31)
    x.copy_(torch.randn(3, 100) * 5)
    ok = reference.compare(x, reference.lse(x)).ok
    print("OK" if ok else "MISMATCH")
    """
)


def test_huge_row_offsets_use_64_bit_index_math():
    """Row 2 starts 2**31 + 16 elements past row 0: 32-bit index math would wrap (run isolated)."""
    proc = subprocess.run([sys.executable, "-c", HUGE_OFFSET_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "OK"


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_long_rows(dtype):
    x = (torch.randn(3, 300_000) * 10).to(dtype)
    x[1, :200_000] = -INF
    _assert_agrees(x, lse(x))


@pytest.mark.gpu
def test_cuda_matches_cpu_oracle():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    x = torch.randn(4096, 5000, device="cuda")
    _assert_agrees(x, lse(x))


TRITON_FIRST = """
import triton
import torch
import reference
try:
    reference.lse(torch.zeros(2, 3))
except reference.InvalidArgument as exc:
    print("refused:", exc)
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="without a CUDA device only: the interpreter case")
def test_triton_imported_before_the_interpreter_gets_a_message_with_the_fix():
    # Triton decorates its own library functions when it is imported: turned on later, the
    # interpreter cannot run any kernel, and Triton's own error does not say why.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", TRITON_FIRST], capture_output=True, text=True, timeout=120, env=env)
    assert "refused: triton was imported before Triton's interpreter was turned on" in done.stdout, done.stderr
    assert "set TRITON_INTERPRET=1 in the environment" in done.stdout


VARIANTS_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from fuzz.interpreter import specialization
    specialization.install(sys.argv[1])
    from reference import lse
    # The same tiles, warps and split on every launch (13 and 16 rows take one 16-row block, 1004
    # and 1008 columns the same tiles and alignment): only the classes of M, N, the row stride
    # and the split count differ (divisible by 16 or not).
    for rows in (13, 16):
        for cols in (1004, 1008):
            lse(torch.randn(rows, cols))
    lse(torch.randn(16, 2016)[:, ::2])  # a column stride of 2: its own class
""")


def test_only_the_column_stride_of_the_integer_arguments_makes_another_compiled_kernel(tmp_path):
    # Each specialization class of an integer argument is another binary, compiled for about a
    # second on a GPU. M, N, the row stride and the split count carry nothing the loads need (the
    # alignment comes in ROW_ALIGN and COL_ALIGN), so they are left unspecialized; the column
    # stride is specialized (== 1 is a contiguous row). Counted with the launches' keys, which
    # are the same in Triton's interpreter (fuzz.interpreter.specialization).
    from fuzz.interpreter.specialization import read_records, summarize

    path = tmp_path / "variants.jsonl"
    done = subprocess.run([sys.executable, "-c", VARIANTS_SCRIPT, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = summarize(read_records(path))
    assert summary["classes"] == {"_lse_kernel": {"stride_col": ["1", "i32"]}, "_lse_combine_kernel": {}}, summary
    assert summary["variants"] == 3  # the kernel twice (a column stride of 1 or 2), the combine once
