"""Bandwidth of this tree's reference kernel against another version of it, timed in turn.

    python bench/compare_kernels.py OTHER_DIR [--label NAME]

``OTHER_DIR`` holds the other version as a package named ``reference_other`` (the files of
``reference/``, e.g. ``mkdir -p build/other/reference_other && git archive COMMIT reference |
tar -x --strip-components=1 -C build/other/reference_other``). For each benchmark shape and dtype
(``bench._common``): both outputs are checked against the float64 oracle, then each kernel is
timed (median, ``triton.testing.do_bench``) twice, alternating, so drift on the GPU hits both
alike. Prints GB/s, the fraction of copy bandwidth and the ratio of this tree's to the other's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._common import DTYPES, SHAPES, copy_bandwidth_gbs, lse_bytes, median_ms  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the directory holding the package reference_other")
    parser.add_argument("--label", default="other", help="the other version's name in the table")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("compare_kernels: needs a CUDA GPU", file=sys.stderr)
        return 2
    sys.path.insert(0, str(args.other.resolve()))
    import reference
    import reference_other

    copy_gbs = copy_bandwidth_gbs()
    print(f"{torch.cuda.get_device_name()}; copy bandwidth {copy_gbs:.0f} GB/s (read + write)")
    print(f"| shape | dtype | this tree GB/s | % copy | {args.label} GB/s | % copy | ratio |")
    print("|---|---|---|---|---|---|---|")
    for dtype_name, dtype in DTYPES.items():
        for shape in SHAPES:
            torch.manual_seed(0)
            x = (torch.randn(shape, device="cuda") * 4).to(dtype)
            for kernel in (reference.lse, reference_other.lse):
                if not reference.compare(x, kernel(x)).ok:
                    print(f"WRONG RESULT for {shape} {dtype_name}", file=sys.stderr)
                    return 1
            ms = {"this": [], "other": []}
            for _ in range(2):
                ms["this"].append(median_ms(lambda: reference.lse(x)))
                ms["other"].append(median_ms(lambda: reference_other.lse(x)))
            gbs = {k: lse_bytes(x) / (min(v) * 1e-3) / 1e9 for k, v in ms.items()}
            print(f"| {shape[0]}x{shape[1]} | {dtype_name} | {gbs['this']:.0f} | {100 * gbs['this'] / copy_gbs:.0f}% | "
                  f"{gbs['other']:.0f} | {100 * gbs['other'] / copy_gbs:.0f}% | {gbs['this'] / gbs['other']:.3f} |",
                  flush=True)
            del x
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
