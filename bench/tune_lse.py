"""Sweep launch configurations of reference.lse on a CUDA GPU, to choose the launch policy.

    python bench/tune_lse.py [--seconds 400]

Prints, per shape and dtype, the policy's own time and the best configurations found, as fractions
of the copy bandwidth. Every configuration's output is checked against the oracle first.
"""

from __future__ import annotations

import argparse
import itertools
import random
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench._common import DTYPES, SHAPES, copy_bandwidth_gbs, lse_bytes, median_ms  # noqa: E402


def configs(x, sms):
    from reference._launch import LaunchConfig, _align, needs_int64

    rows, cols = x.shape
    np2 = 1 << (cols - 1).bit_length()
    combos = list(itertools.product((1024, 2048, 4096, 8192), (16, 32), (4, 8, 16), (0, 2), (1, 3)))
    random.Random(0).shuffle(combos)
    for block_n, tile_kb, warps, waves, stages in combos:
        block_n = min(block_n, np2)
        block_m = max(1, min(tile_kb * 1024 // (block_n * x.element_size()), 1 << (rows - 1).bit_length()))
        row_blocks = math.ceil(rows / block_m)
        tiles = math.ceil(cols / block_n)
        splits = 1
        if waves and row_blocks < waves * sms and tiles > 1:
            splits = min(tiles, math.ceil(waves * sms / row_blocks))
        per_split = math.ceil(tiles / splits) * block_n
        splits = math.ceil(cols / per_split)
        yield (LaunchConfig(block_m, block_n, splits, per_split, warps, stages, needs_int64(x), _align(x.stride(0), x.element_size()), _align(math.gcd(cols, per_split), x.element_size()), row_blocks), stages)


def variants(x, sms):
    """The launch policy's own choice, and small departures from it (warps, taller or wider tiles)."""
    import dataclasses

    from reference._launch import launch_config

    base = launch_config(x, interpreter=False, multiprocessors=sms)
    yield base
    yield dataclasses.replace(base, num_warps=8)
    if base.block_m >= 2:
        yield dataclasses.replace(base, block_m=base.block_m * 2, row_blocks=-(-x.shape[0] // (base.block_m * 2)))
    elif x.shape[1] >= 8192 and base.splits == 1:
        yield dataclasses.replace(base, block_n=8192, cols_per_split=-(-x.shape[1] // 8192) * 8192)


def run_variants(copy_gbs, sms, dtypes) -> None:
    import reference
    from reference import _lse_kernel

    for dtype_name in dtypes:
        for shape in SHAPES:
            x = (torch.randn(shape, device="cuda") * 4).to(DTYPES[dtype_name])
            cells = []
            for cfg in variants(x, sms):
                got = _lse_kernel._launch(x, cfg, torch.float32)
                assert reference.compare(x, got).ok, cfg
                ms = median_ms(lambda: _lse_kernel._launch(x, cfg, torch.float32), rep_ms=100)
                frac = lse_bytes(x) / (ms * 1e-3) / 1e9 / copy_gbs
                cells.append(f"{100 * frac:.1f}% (bm={cfg.block_m} bn={cfg.block_n} w={cfg.num_warps} s={cfg.splits})")
            print(f"{shape} {dtype_name}: " + " | ".join(cells), flush=True)
            del x


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=400)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--variants", action="store_true", help="only the policy and small departures from it")
    args = parser.parse_args()
    import reference
    from reference import _lse_kernel

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy_gbs = copy_bandwidth_gbs()
    print(f"copy {copy_gbs:.0f} GB/s, {sms} SMs", flush=True)
    if args.variants:
        run_variants(copy_gbs, sms, args.dtypes.split(","))
        return 0
    dtypes = args.dtypes.split(",")
    for dtype_name in dtypes:
        for shape in SHAPES:
            deadline = time.time() + args.seconds / (len(SHAPES) * len(dtypes))
            x = (torch.randn(shape, device="cuda") * 4).to(DTYPES[dtype_name])
            nbytes = lse_bytes(x)
            policy = nbytes / (median_ms(lambda: reference.lse(x), rep_ms=60) * 1e-3) / 1e9 / copy_gbs
            seen, results = set(), []
            for cfg, stages in configs(x, sms):
                if (cfg, stages) in seen or time.time() > deadline:
                    continue
                seen.add((cfg, stages))
                try:
                    got = _lse_kernel._launch(x, cfg, torch.float32)
                    if not reference.compare(x, got).ok:
                        print("  WRONG", cfg, flush=True)
                        continue
                    ms = median_ms(lambda: _lse_kernel._launch(x, cfg, torch.float32), rep_ms=40)
                except Exception as exc:  # resource limits on big tiles
                    print("  failed", cfg, type(exc).__name__, flush=True)
                    continue
                results.append((nbytes / (ms * 1e-3) / 1e9 / copy_gbs, cfg, stages))
            results.sort(key=lambda r: -r[0])
            print(f"{shape} {dtype_name}: policy {100 * policy:.1f}%  tried {len(results)}", flush=True)
            for frac, cfg, stages in results[:4]:
                print(f"   {100 * frac:.1f}% bm={cfg.block_m} bn={cfg.block_n} splits={cfg.splits} warps={cfg.num_warps} stages={stages}", flush=True)
            del x
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
