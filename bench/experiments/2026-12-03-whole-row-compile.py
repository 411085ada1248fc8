"""How long a whole-row kernel (BLOCK = next power of two of N) takes to compile, by block, cold.

    python bench/experiments/2026-12-03-whole-row-compile.py [--limit 150] [--dtypes float32,float16]

Ran on an H200 (tree of 2026-12-03, Triton 3.6) to choose the longest row the fuzzer draws by
default (``fuzz.strategies._DEFAULT_MAX_COLS``). Loads ``tests/implementations/correct/whole_row_any_n.py``
with an empty Triton cache, then for N = 2**k + 1 (a block of 2**(k+1) lanes) times the first call
(compile and run) and a second (run only), block by block, until one first call passes 60 s or the
whole run passes ``--limit`` seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="whole-row-cache-")
ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=float, default=150.0)
    parser.add_argument("--dtypes", default="float32,float16")
    args = parser.parse_args()
    import torch

    spec = importlib.util.spec_from_file_location("whole_row", ROOT / "tests/implementations/correct/whole_row_any_n.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    began = time.monotonic()
    print("dtype block first_call_s second_call_s", flush=True)
    for dtype in args.dtypes.split(","):
        for k in range(9, 21):
            if time.monotonic() - began > args.limit:
                print(f"# stopped: {args.limit:g} s spent", flush=True)
                return 0
            x = torch.randn(2, 2**k + 1, device="cuda").to(getattr(torch, dtype))
            started = time.monotonic()
            module.lse(x)
            torch.cuda.synchronize()
            first = time.monotonic() - started
            started = time.monotonic()
            module.lse(x)
            torch.cuda.synchronize()
            print(f"{dtype} {2**(k + 1)} {first:.2f} {time.monotonic() - started:.4f}", flush=True)
            if first > 60:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
