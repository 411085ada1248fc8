"""Independent check of the corpus: every implementation against torch.logsumexp(x.double(), 1).

    python bench/check_corpus.py [NAME ...] [--device cuda] [--bench]

Runs each implementation of the false-alarm corpus (``tests/implementations/correct``; all of it by
default) over a fixed table of inputs: every dtype;
contiguous, transposed, column-step, padded and storage-offset layouts; shapes with M = 0, N = 0,
1 x 1, long rows (70000 columns) and many short rows; rows of -inf, all -inf, +inf, +inf beside
-inf, NaN, values at the dtype's limits, near exp overflow, tiny, one dominant entry; and views
whose elements lie 2**31 elements past the storage start through a huge row stride and through a
huge column stride (unbacked memory on the CPU; 4-17 GB per dtype on a GPU). It checks shape,
dtype (float32 or x's), device, a fresh result, x unchanged, two calls identical, and each row
within a simple error bound of the float64 answer *rounded to the output dtype* (so float32
output for float64 input may be +-inf where the float64 answer overflows float32); non-finite
answers must match exactly. It imports neither the project's fuzzer nor its oracle.

On a CPU, ``autotuned.py`` cannot launch (Triton's interpreter has no driver for the autotuner),
so each of its configurations is checked by launching the inner kernel directly. ``--bench``
(CUDA only) prints the read bandwidth of each implementation on a (4096, 8192) float32 input.
Takes minutes on the CPU (one-program-per-row kernels in the interpreter); seconds on a GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported anywhere

HERE = Path(__file__).resolve().parents[1] / "tests" / "implementations" / "correct"
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 2.0**-53}
INT_VIEW = {2: torch.int16, 4: torch.int32, 8: torch.int64}
inf, nan = math.inf, math.nan


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"corpus_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def autotune_config_impls(module):
    """One lse per autotune config of autotuned.py, launching the inner @triton.jit kernel directly."""
    impls = {}
    for index, config in enumerate(module.CONFIGS):
        def lse(x, config=config):
            rows, cols = x.shape
            out = torch.empty(rows, dtype=torch.float64 if x.dtype == torch.float64 else torch.float32, device=x.device)
            if rows == 0 or cols == 0:
                return out.fill_(-math.inf)
            wide_cols = (cols - 1) * abs(x.stride(1)) >= module.INT32_LIMIT
            module._lse_lanes_kernel.fn[(rows,)](x, out, cols, x.stride(0), x.stride(1), WIDE_COLS=wide_cols,
                                                 num_warps=config.num_warps, **config.kwargs)
            return out
        impls[f"autotuned[config {index}: {config.kwargs}]"] = lse
    return impls


def error_bound(values64: torch.Tensor, expected: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    """Rounding to the output dtype plus float32 accumulation error (terms scale with max |x| and N)."""
    rows, cols = values64.shape
    finite = torch.isfinite(values64)
    magnitude = torch.where(finite, values64.abs(), torch.zeros_like(values64)).amax(1) if cols else torch.zeros(
        rows, dtype=torch.float64, device=values64.device)
    result = torch.where(torch.isfinite(expected), expected.abs(), torch.zeros_like(expected))
    accumulation_steps = math.log2(max(cols, 1)) + cols / 32
    return 2 * UNIT_ROUNDOFF[out_dtype] * result + 2 * 2.0**-24 * (result + 4 * magnitude + 2 * accumulation_steps + 150)


def problems_of(impl, x: torch.Tensor) -> list[str]:
    before = x.clone()
    out = impl(x)
    again = impl(x)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (x.shape[0],):
        return [f"returned {type(out).__name__} of shape {tuple(getattr(out, 'shape', ()))}"]
    if out.dtype not in (torch.float32, x.dtype):
        return [f"dtype {out.dtype}"]
    problems = []
    if out.device != x.device:
        problems.append(f"device {out.device}")
    if out.numel() and x.numel() and out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
        problems.append("result shares x's storage")
    if not torch.equal(out.view(INT_VIEW[out.element_size()]), again.view(INT_VIEW[again.element_size()])):
        problems.append("two calls differ")
    if not torch.equal(before.view(INT_VIEW[x.element_size()]), x.view(INT_VIEW[x.element_size()])):
        problems.append("x was modified")
    values64 = x.double()
    expected = torch.logsumexp(values64, 1)
    rounded = expected.to(out.dtype).double()
    got = out.double()
    bound = error_bound(values64, expected, out.dtype)
    exact = (torch.isnan(got) & torch.isnan(rounded)) | (got == rounded)
    close = torch.isfinite(got) & ((got - expected).abs() <= bound)
    wrong = torch.where(torch.isfinite(rounded), ~close, ~exact)
    if wrong.any():
        row = int(torch.nonzero(wrong)[0])
        problems.append(f"{int(wrong.sum())} rows wrong; row {row}: expected {expected[row].item()!r}, "
                        f"got {got[row].item()!r}, bound {bound[row].item():.3g}; row starts {values64[row, :6].tolist()}")
    return problems


def special_rows(dtype: torch.dtype, cols: int, device) -> torch.Tensor:
    info = torch.finfo(dtype)
    base = torch.randn(16, cols, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    rows = base.clone()
    rows[1, 3] = -inf                      # one -inf
    rows[2] = -inf                         # all -inf
    rows[3, 5] = inf                       # +inf
    rows[4] = -inf
    rows[4, cols - 1] = inf                # +inf beside -inf
    rows[5, 7] = nan                       # NaN
    rows[6, 0], rows[6, 1] = nan, inf      # NaN beside +inf
    rows[7] = info.max
    rows[7, 2] = -info.max                 # the dtype's limits
    rows[8] = -info.max                    # far below zero: no finite shift from an empty prefix
    rows[9] = (88.7 if dtype != torch.float16 else 11.0) + base[9] * 0.01   # near exp overflow
    rows[10] = -40.0
    rows[10, 4] = 0.0                      # one dominant entry
    rows[11] = info.tiny * base[11]        # tiny and subnormal
    rows[12] = -inf
    rows[12, cols // 2] = 3.0              # one finite entry among -inf
    rows[13] = torch.arange(cols, dtype=torch.float64) * 2.0  # ascending: the max keeps growing
    rows[14] = base[14] * (1000.0 if dtype != torch.float16 else 100.0)
    rows[15] = -inf
    rows[15, 0] = nan                      # NaN among -inf
    return rows.to(dtype=dtype, device=device)


def layouts(values: torch.Tensor):
    rows, cols = values.shape
    yield "contiguous", values.clone()
    yield "transposed", values.t().contiguous().t()
    wide = torch.full((rows, 2 * cols + 1), nan, dtype=values.dtype, device=values.device)
    wide[:, : 2 * cols : 2] = values
    yield "column step 2", wide[:, : 2 * cols : 2]
    padded = torch.full((rows, cols + 3), nan, dtype=values.dtype, device=values.device)
    padded[:, :cols] = values
    yield "padded rows", padded[:, :cols]
    flat = torch.full((rows * cols + 7,), nan, dtype=values.dtype, device=values.device)
    offset_view = flat[7:].view(rows, cols)
    offset_view.copy_(values)
    yield "storage offset 7", offset_view


def cases(device, long_rows: bool):
    generator = torch.Generator().manual_seed(0)
    for dtype in DTYPES:
        for shape in [(0, 5), (4, 0), (0, 0), (1, 1), (3, 5), (5, 129)]:
            values = (torch.randn(shape, generator=generator, dtype=torch.float64) * 3).to(dtype=dtype, device=device)
            for layout, x in layouts(values):
                yield f"{dtype} {shape} {layout}", x
        for layout, x in layouts(special_rows(dtype, 37, device)):
            yield f"{dtype} special rows {layout}", x
        yield f"{dtype} special rows, 5000 columns", special_rows(dtype, 5000, device)[:4]
        storage = torch.empty(2**31 + 64, dtype=dtype, device=device)  # unbacked on the CPU
        values = torch.randn(3, 5, generator=generator, dtype=torch.float64).to(dtype=dtype, device=device)
        huge_rows = storage.as_strided((3, 5), (2**30, 1), 7)  # last row 2**31 + 7 elements in
        huge_rows.copy_(values)
        yield f"{dtype} huge row stride", huge_rows
        huge_cols = storage.as_strided((2, 3), (1, 2**30), 9)  # last column 2**31 + 10 elements in
        huge_cols.copy_(values[:2, :3])
        yield f"{dtype} huge column stride", huge_cols
        del storage, huge_rows, huge_cols
    if long_rows:
        for shape in [(7, 1000), (2, 70000), (1000, 3)]:
            values = torch.randn(shape, generator=generator).to(device)
            yield f"float32 {shape}", values
            yield f"float32 {shape} transposed", values.t().contiguous().t()
            yield f"float16 {shape}", values.half()
        yield "float64 values up to 4e4", (torch.randn(4, 3000, generator=generator) * 1e4).double().to(device)


def bench(impl, device) -> str:
    import triton.testing
    x = torch.randn(4096, 8192, device=device)
    ms = triton.testing.do_bench(lambda: impl(x))
    return f"{x.numel() * x.element_size() / ms / 1e6:.0f} GB/s ({ms * 1e3:.0f} us)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="file stems (default: every implementation here)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--no-long-rows", action="store_true", help="skip the (2, 70000) and (1000, 3) inputs")
    parser.add_argument("--bench", action="store_true", help="CUDA only: read bandwidth on (4096, 8192) float32")
    args = parser.parse_args()
    # The N-D members (a call convention in contracts.json) take other inputs than this table's.
    table = json.loads((HERE / "contracts.json").read_text())
    names = args.names or sorted(p.stem for p in HERE.glob("*.py")
                                 if not {"ndim", "dim"} & set(table.get(p.name, {})))
    failures = 0
    for name in names:
        module = load(name)
        on_interpreter = os.environ.get("TRITON_INTERPRET") == "1"
        impls = autotune_config_impls(module) if name == "autotuned" and on_interpreter else {name: module.lse}
        for label, impl in impls.items():
            started = time.perf_counter()
            bad = [(case, problems) for case, x in cases(args.device, not args.no_long_rows)
                   if (problems := problems_of(impl, x))]
            for case, problems in bad:
                print(f"  FAIL {label}: {case}: {'; '.join(problems)}")
            speed = f"; {bench(impl, args.device)}" if args.bench and args.device != "cpu" else ""
            print(f"{label}: {'ok' if not bad else f'{len(bad)} failing cases'} in {time.perf_counter() - started:.1f} s{speed}",
                  flush=True)
            failures += len(bad)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
