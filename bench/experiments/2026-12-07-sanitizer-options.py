"""Whether compute-sanitizer's own options shorten a memory phase's processes (tree a7b814b and after).

    python bench/experiments/2026-12-07-sanitizer-options.py [--at-once K] [--rounds R] [--json OUT] TARGET [TARGET ...]

A memory mutant's phase in a cold `lse-fuzz mutants` on a GPU takes 9-14 s, half of it the probe
process's start under the tool, half its first probe's compile and launch (the section of
2026-12-07 (fifth) in bench/RESULTS.md). The phase runs the tool with its defaults. This runs each
TARGET's memcheck process as :mod:`fuzz.memory.phase` starts it (through
``2026-12-07-memory-phase-lines.py``), K at once, with each variant of tool options in turn
(``R`` rounds, the variants' order alternating, a cold Triton cache for each batch), and prints
each batch's wall clock and its processes' seconds and first lines, then the medians per
variant. It also prints ``compute-sanitizer --help``'s lines on the options varied (their defaults).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("phase_lines", HERE / "2026-12-07-memory-phase-lines.py")
lines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lines)

VARIANTS = {
    "defaults": [],
    "application-only": ["--target-processes", "application-only"],
    "no-heap-check": ["--check-device-heap", "no"],
    "both": ["--target-processes", "application-only", "--check-device-heap", "no"],
}
"""Tool options inserted after ``--tool memcheck``: children (ptxas, the C compiler Triton's
launcher needs) left unpatched; no checks of the device-side heap, which Triton kernels do not use."""


ORIGINAL = lines.command  # wrapped afresh for each variant: one variant's options never carry into the next


def with_options(extra: list[str]):
    def command(target, tool, executable, directory):
        argv, env = ORIGINAL(target, tool, executable, directory)
        if executable is not None and extra:
            argv = [*argv[:3], *extra, *argv[3:]]  # executable --tool TOOL <extra> ...
        return argv, env
    return command


def batch(targets: list[str], executable: str, extra: list[str], at_once: int) -> dict:
    lines.command = with_options(extra)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        began = time.monotonic()
        with ThreadPoolExecutor(at_once) as pool:
            runs = list(pool.map(lambda t: lines.stamped(t, "memcheck", executable), targets))
        wall = time.monotonic() - began
    return {"wall": round(wall, 3), "runs": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--at-once", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    executable = lines.sanitizer.find()
    if executable is None:
        print("no compute-sanitizer here: this experiment is for a GPU host")
        return 1
    helped = subprocess.run([executable, "--help"], capture_output=True, text=True).stdout.splitlines()
    for i, line in enumerate(helped):
        if any(name in line for name in ("--target-processes", "--check-device-heap", "--lazy-patching")):
            print(" | ".join(s.strip() for s in helped[i:i + 3]))
    names = list(VARIANTS)
    results: dict[str, list[dict]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            done = batch(args.targets, executable, VARIANTS[name], args.at_once)
            results[name].append(done)
            seconds = sorted(run["seconds"] for run in done["runs"])
            firsts = sorted(run["lines"][0][0] for run in done["runs"] if run["lines"])
            exits = sorted({run["exit"] for run in done["runs"]})
            print(f"round {round_} {name}: wall {done['wall']:.1f} s; processes {seconds[0]:.1f}-{seconds[-1]:.1f} s; "
                  f"first lines {firsts[0] if firsts else float('nan'):.1f}-{firsts[-1] if firsts else float('nan'):.1f} s; "
                  f"exits {exits}", flush=True)
    for name in names:
        walls = [done["wall"] for done in results[name]]
        each = [run["seconds"] for done in results[name] for run in done["runs"]]
        print(f"{name}: wall median {statistics.median(walls):.1f} s ({', '.join(f'{w:.1f}' for w in walls)}); "
              f"process median {statistics.median(each):.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
