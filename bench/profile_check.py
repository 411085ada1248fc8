"""Where the time of one ``lse_fuzz.check`` run goes: examples per second, Triton compiles, hot functions.

    python bench/profile_check.py [--impl reference:lse] [--device auto] [--budget 100] [--seed 0]
                                  [--max-elements N] [--top 25]

Runs ``lse_fuzz.check`` once under cProfile and prints the pace, how many Triton kernels were
compiled (calls of a backend's first compile stage, ``make_ttir``, which only a cache miss
reaches) and the seconds spent in ``triton.compiler.compile`` (misses and disk-cache hits), and
the functions with the most cumulative and own time. Use it before tuning a campaign: on a GPU
the kernel's microseconds are rarely what limits the examples per second; on the H200 a cold
run spent most of its time compiling (bench/RESULTS.md; the logs at commit 5c5a315,
``bench/results/2026-11-29-h200-profile-check-*.log``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _compile_stats(stats: pstats.Stats) -> tuple[int, float]:
    """(kernels compiled, seconds in triton.compiler.compile): compiled = calls of a backend's
    ``make_ttir`` (the first stage, reached on a cache miss only); seconds include cache hits."""
    compiled, seconds = 0, 0.0
    for (filename, _, name), (_, primitive, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        path = filename.replace("\\", "/")
        if name == "make_ttir" and "/triton/backends/" in path:
            compiled += primitive
        elif name == "compile" and path.endswith("triton/compiler/compiler.py"):
            seconds += cumulative
    return compiled, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference:lse", help="TARGET: path/to/file.py:func or module:func")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-elements", type=int, default=None)
    parser.add_argument("--top", type=int, default=25, help="functions listed per table")
    args = parser.parse_args(argv)

    import lse_fuzz
    from bench._common import run_header
    from fuzz.target import load_target
    from fuzz.validate import device as parse_device
    from reference.errors import InvalidArgument

    try:
        device = str(parse_device(args.device))
    except InvalidArgument as exc:
        parser.error(str(exc))
    impl = load_target(args.impl)
    print(f"# {run_header(device)}\n# profile of lse_fuzz.check({args.impl}, budget={args.budget}, seed={args.seed}, "
          f"device={device}, max_elements={args.max_elements})", flush=True)
    profiler = cProfile.Profile()
    profiler.enable()
    result = lse_fuzz.check(impl, budget=args.budget, seed=args.seed, device=device, max_elements=args.max_elements,
                            target=args.impl)
    profiler.disable()
    print(result.summary().splitlines()[0])
    stats = pstats.Stats(profiler)
    compiles, compile_s = _compile_stats(stats)
    share = f" ({compile_s / result.seconds:.0%})" if result.seconds else ""
    print(f"triton kernels compiled: {compiles}; seconds in triton.compiler.compile: {compile_s:.1f} of "
          f"{result.seconds:.1f}{share}")
    for order in ("cumulative", "tottime"):
        stats.stream = out = io.StringIO()
        stats.sort_stats(order).print_stats(args.top)
        print(f"\n## top {args.top} by {order}\n" + out.getvalue().split("\n\n", 1)[-1].strip())
    return 0 if result.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
