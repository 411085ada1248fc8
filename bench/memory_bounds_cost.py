"""What checking every access costs on the CPU: Triton kernels in the interpreter, the memory checks on and off.

    python bench/memory_bounds_cost.py [--calls 60] [--repeats 3] [--seed 0] [KERNEL.py ...]

``fuzz.interpreter.bounds`` checks each lane of every load, store and atomic of an interpreted
kernel against the launch's tensor arguments (``memory_bounds``), and ``fuzz.interpreter.initialized``
tracks the bytes of the call's ``torch.empty`` allocations (``uninitialized_read``). This times the
same calls (a fixed set of shapes like the fuzzer's: 1 to 63 rows, 1 to 4096 columns) with both
checks on, with ``memory_bounds`` alone and with neither (``bounds.judging``), best of ``--repeats``,
for each kernel (default: the Triton kernels of the
correct corpus but the autotuned, the N-D and the very slow ones, and ``reference.lse``), and prints
a Markdown table. The kernel time is what the
check adds to; a fuzzing run spends the rest generating inputs and judging outputs, so its share
of a whole ``lse-fuzz check`` is smaller still. CPU only (on a GPU nothing is interpreted).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported

from reference._device import ensure_interpreter  # noqa: E402

ensure_interpreter()

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench._common import run_header  # noqa: E402
from fuzz.interpreter import bounds, repairs  # noqa: E402

CORRECT = ROOT / "tests" / "implementations" / "correct"
SLOW = {"reduce_combine"}  # its custom combine runs once per element in the interpreter: minutes per round


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_cost_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lse


def _triton_kernels() -> list[Path]:
    """The correct corpus's Triton kernels of 2-D rows; not the autotuned ones, whose launch benchmarks
    configs (the fuzzer pins one per example instead: fuzz.interpreter.autotune), nor those its
    contracts.json declares N-D."""
    n_d = {name for name, contract in json.loads((CORRECT / "contracts.json").read_text()).items() if "ndim" in contract}
    return sorted(p for p in CORRECT.glob("*.py") if "@triton.jit" in p.read_text() and "autotune" not in p.read_text()
                  and p.name not in n_d and p.stem not in SLOW)


def _seconds(fn, inputs, *, bounded: bool = False, initialized: bool = False) -> float:
    started = time.perf_counter()
    with np.errstate(all="ignore"):  # the interpreter evaluates both sides of a tl.where: inf - inf, log(0)
        for x in inputs:
            with bounds.judging(bounded, initialized=initialized):  # as each call of a run is judged
                bounds.judge_result(fn(x))
    return time.perf_counter() - started


def _best_of(fn, inputs, repeats: int) -> tuple[float, float, float]:
    """(both checks, memory_bounds alone, unchecked): the best of ``repeats`` rounds, the three
    alternating within each round so that a machine's changing load falls on all alike."""
    both = alone = unchecked = float("inf")
    for _ in range(repeats):
        both = min(both, _seconds(fn, inputs, bounded=True, initialized=True))
        alone = min(alone, _seconds(fn, inputs, bounded=True))
        unchecked = min(unchecked, _seconds(fn, inputs))
    return both, alone, unchecked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", type=Path, help="files defining lse(x) (default: the correct corpus's Triton kernels)")
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    repairs.install()
    rng = random.Random(args.seed)
    shapes = [(rng.choice([1, 2, 3, 5, 8, 17, 31, 63]), rng.choice([1, 3, 7, 64, 100, 257, 1000, 2049, 4096]))
              for _ in range(args.calls)]
    inputs = [torch.randn(rows, cols) for rows, cols in shapes]
    import reference  # noqa: PLC0415 (after the interpreter is on)
    targets = [(p.name, _load(p)) for p in (args.kernels or _triton_kernels())] + \
        ([("reference.lse", reference.lse)] if not args.kernels else [])
    print(run_header("cpu"))
    print(f"`python bench/memory_bounds_cost.py --calls {args.calls} --repeats {args.repeats} --seed {args.seed}`\n")
    print("| kernel | checked s | bounds only s | unchecked s | overhead | bounds only |")
    print("|---|---|---|---|---|---|")
    ratios, alone_ratios = [], []
    for name, fn in targets:
        _seconds(fn, inputs[:3])  # imports and first launches out of the timing
        checked, alone, unchecked = _best_of(fn, inputs, args.repeats)
        ratios.append(checked / unchecked)
        alone_ratios.append(alone / unchecked)
        print(f"| {name} | {checked:.2f} | {alone:.2f} | {unchecked:.2f} | {100 * (checked / unchecked - 1):+.1f}% "
              f"| {100 * (alone / unchecked - 1):+.1f}% |", flush=True)
    ratios.sort()
    alone_ratios.sort()
    print(f"\n{len(ratios)} kernels, {args.calls} calls each: median overhead "
          f"{100 * (ratios[len(ratios) // 2] - 1):+.1f}%, largest {100 * (ratios[-1] - 1):+.1f}% "
          f"(memory_bounds and uninitialized_read); memory_bounds alone: median "
          f"{100 * (alone_ratios[len(alone_ratios) // 2] - 1):+.1f}%, largest {100 * (alone_ratios[-1] - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
