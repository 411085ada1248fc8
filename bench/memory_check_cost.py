"""What the memory checks cost a whole `lse-fuzz check` on the CPU: each kernel checked with them and without.

    python bench/memory_check_cost.py [--seeds 0,1] [--budget 200] [KERNEL.py ...]

``bench/memory_bounds_cost.py`` times the kernel calls alone; a check also draws inputs, computes
the oracle and starts its worker, so the share of a whole run is what a user waits for. This runs
``lse-fuzz check KERNEL --device cpu --seed S --budget B`` with every check, and with every check
but ``memory_bounds`` and ``uninitialized_read``, alternating, and prints the wall-clock seconds of
each (default: a few Triton kernels of the correct corpus and the slowest of the cost table) as a
Markdown table. CPU only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import run_header  # noqa: E402

CORRECT = ROOT / "tests" / "implementations" / "correct"
DEFAULT = ["tutorial_whole_row.py", "split_row.py", "libdevice_tanh_merge.py", "two_pass.py"]
MEMORY = ("memory_bounds", "uninitialized_read")


def _seconds(kernel: Path, seed: str, budget: int, checks: list[str] | None) -> tuple[float, int]:
    command = [sys.executable, "-m", "fuzz", "check", str(kernel), "--device", "cpu", "--seed", seed,
               "--budget", str(budget)] + (["--checks", ",".join(checks)] if checks else [])
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - started, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", type=Path)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--budget", type=int, default=200)
    args = parser.parse_args(argv)
    from fuzz.checks import CHECKS  # noqa: PLC0415 (after the path is set)

    others = [name for name in CHECKS if name not in MEMORY]
    kernels = args.kernels or [CORRECT / name for name in DEFAULT]
    print(run_header("cpu"))
    print(f"`python bench/memory_check_cost.py --seeds {args.seeds} --budget {args.budget}`\n")
    print("| kernel | seed | with s | without s | overhead |")
    print("|---|---|---|---|---|")
    ratios = []
    for kernel in kernels:
        for seed in args.seeds.split(","):
            with_, code = _seconds(kernel, seed, args.budget, None)
            without, other = _seconds(kernel, seed, args.budget, others)
            ratios.append(with_ / without)
            verdicts = "" if code == other == 0 else f" (exit {code} / {other})"
            print(f"| {kernel.name} | {seed} | {with_:.1f} | {without:.1f} | {100 * (with_ / without - 1):+.1f}%"
                  f"{verdicts} |", flush=True)
    ratios.sort()
    print(f"\n{len(ratios)} checks: median overhead {100 * (ratios[len(ratios) // 2] - 1):+.1f}%, "
          f"largest {100 * (ratios[-1] - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
