"""Achieved bandwidth of reference.lse against a device-to-device copy, torch.logsumexp and
torch.compile(torch.logsumexp), on a CUDA GPU.

    python bench/bench_lse.py [--out bench/RESULTS.md] [--no-compile]

For each shape and dtype: GB/s (bytes = M*N*element size + 4*M, the fewest bytes LSE must move),
and that figure as a fraction of the copy bandwidth measured in the same run. Every timed kernel's
output is first checked against the float64 oracle under the tolerance model. Median of repeated
timings (triton.testing.do_bench).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._common import DTYPES, SHAPES, copy_bandwidth_gbs, lse_bytes, median_ms  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the Markdown table here too")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile(torch.logsumexp)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_lse: needs a CUDA GPU (this measures GPU bandwidth)", file=sys.stderr)
        return 2

    import triton

    import reference

    torch._dynamo.config.cache_size_limit = 64
    compiled = None if args.no_compile else torch.compile(lambda x: torch.logsumexp(x, dim=1), dynamic=False)
    copy_gbs = copy_bandwidth_gbs()
    header = (
        f"Device: {torch.cuda.get_device_name()}; torch {torch.__version__}; triton {triton.__version__}; "
        f"{datetime.date.today().isoformat()}; copy bandwidth {copy_gbs:.0f} GB/s (read + write).\n"
        f"Command: python bench/bench_lse.py{' --no-compile' if args.no_compile else ''}\n"
    )
    rows = [
        "| shape | dtype | lse GB/s | lse % copy | torch GB/s | torch % | compile GB/s | compile % | lse ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print(header)
    print("\n".join(rows), flush=True)
    worst = 1.0
    for dtype_name, dtype in DTYPES.items():
        for shape in SHAPES:
            torch.manual_seed(0)
            x = (torch.randn(shape, device="cuda") * 4).to(dtype)
            got = reference.lse(x)
            comparison = reference.compare(x, got)
            if not comparison.ok:
                print(f"WRONG RESULT for {shape} {dtype_name}: {comparison.mismatches} rows", file=sys.stderr)
                return 1
            nbytes = lse_bytes(x)
            results = {"lse": median_ms(lambda: reference.lse(x))}
            results["torch"] = median_ms(lambda: torch.logsumexp(x, dim=1))
            if compiled is not None:
                compiled(x)
                results["compile"] = median_ms(lambda: compiled(x))
            gbs = {k: nbytes / (ms * 1e-3) / 1e9 for k, ms in results.items()}
            worst = min(worst, gbs["lse"] / copy_gbs)
            cells = [f"{shape[0]}x{shape[1]}", dtype_name]
            for key in ("lse", "torch", "compile"):
                if key in gbs:
                    cells += [f"{gbs[key]:.0f}", f"{100 * gbs[key] / copy_gbs:.0f}%"]
                else:
                    cells += ["-", "-"]
            cells.append(f"{results['lse']:.3f}")
            rows.append("| " + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
            del x
    summary = f"\nLowest lse fraction of copy bandwidth: {100 * worst:.1f}%\n"
    print(summary)
    if args.out:
        args.out.write_text(f"# LSE kernel bandwidth\n\n{header}\nHost: {platform.node()}\n\n" + "\n".join(rows) + "\n" + summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
