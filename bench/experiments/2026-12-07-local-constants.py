"""Why a GPU host's mutation gate split its stream otherwise once the fork server stopped importing
torch._dynamo (2026-12-07, seventh): Hypothesis's pool of local constants.

Hypothesis draws some integers and floats from the constants in the source of every *local* module
loaded (a file outside the standard library and site-packages). On the GPU hosts the wheels this
project carries are installed with ``pip --target`` into a plain folder on PYTHONPATH, so mpmath,
which torch._dynamo imports through sympy, counts as local there: with dynamo preloaded its
constants were in the pool, without it they were not, and the GPU-sized stream of launch classes
changed. This draws that stream (``fuzz.strategies.lse_inputs(device=...)``, seed 0, 250
examples, drawn and never built, so ``cuda`` needs no GPU) in fresh processes: with mpmath from
site-packages and from a copy in a plain folder, with and without ``import torch._dynamo`` first,
and with and without :func:`fuzz.stream.own_stream` (tree of 2026-12-07, eighth).

    python bench/experiments/2026-12-07-local-constants.py [--device cuda] [--seed 0] [--examples 250]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DRAW = r"""
import contextlib, hashlib, sys
import torch
if sys.argv[1] == "dynamo":
    import torch._dynamo  # noqa: F401
from hypothesis import HealthCheck, Phase, given, seed, settings
from fuzz.shrinking import launch_class
from fuzz.strategies import lse_inputs
from fuzz.stream import own_stream
seen = []
@settings(max_examples=int(sys.argv[5]), database=None, phases=[Phase.generate], deadline=None,
          suppress_health_check=list(HealthCheck))
@seed(int(sys.argv[4]))
@given(lse_inputs(device=sys.argv[3]))
def draw(x):
    seen.append(repr(launch_class(x)))
with own_stream() if sys.argv[2] == "own_stream" else contextlib.nullcontext():
    draw()
where = sys.modules["mpmath"].__file__ if "mpmath" in sys.modules else "not imported"
print(hashlib.sha256("\n".join(seen).encode()).hexdigest()[:12], len(set(seen)), where)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="the device the strategies size the draws for")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=250)
    args = parser.parse_args()
    import mpmath  # noqa: PLC0415 - only to find its package

    plain = Path(tempfile.mkdtemp(prefix="plain-folder-"))
    shutil.copytree(Path(mpmath.__file__).parent, plain / "mpmath")
    print(f"{'mpmath from':14s} {'imports':8s} {'pool':11s} digest       classes  mpmath loaded from")
    try:
        for where, path in (("site-packages", ""), ("a plain folder", str(plain))):
            for pool in ("as it is", "own_stream"):
                for imports in ("plain", "dynamo"):
                    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (path, str(ROOT)) if p)}
                    done = subprocess.run([sys.executable, "-c", DRAW, imports, pool, args.device, str(args.seed),
                                           str(args.examples)], env=env, capture_output=True, text=True, cwd=ROOT)
                    line = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else done.stderr[-300:]
                    print(f"{where:14s} {imports:8s} {pool:11s} {line}")
    finally:
        shutil.rmtree(plain, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
