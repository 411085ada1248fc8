#!/usr/bin/env bash
# Where a GPU check's host time goes when nothing compiles: a torch wrapper (no Triton kernel) checked
# with one part, four parts and without huge offsets; a cProfile of the one-part check's parent
# process; and the isolated worker's start and per-call cost on small and 16 MiB inputs.
#
#     bash bench/gpu_overhead.sh OUT_DIR
set -uo pipefail
out=${1:?usage: bash bench/gpu_overhead.sh OUT_DIR}
mkdir -p "$out"; out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
target=tests/implementations/correct/torch_float32.py:lse
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"; nvidia-smi --query-gpu=name --format=csv,noheader | head -1
  for args in "--parts 1" "--parts 4" "--parts 1 --no-huge-offsets" "--parts 1 --max-elements 65536"; do
    start=$(date +%s.%N)
    python3 -m fuzz check "$target" --device cuda $args > /dev/null 2>&1
    echo "check $target --device cuda $args: rc=$? wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s"
  done
  python3 -m cProfile -o "$out/check.prof" -m fuzz check "$target" --device cuda --parts 1 > /dev/null 2>&1
  python3 -c "import pstats; s = pstats.Stats('$out/check.prof'); s.sort_stats('cumulative').print_stats(45); s.sort_stats('tottime').print_stats(35)" | sed "s|$PWD/||g; s|/usr/[^ ]*site-packages/|site-packages/|g"
  python3 - "$target" <<'PY'
import sys, time
import torch
from fuzz.isolation import IsolatedImpl
t = time.perf_counter(); impl = IsolatedImpl(sys.argv[1], device="cuda"); impl.start()
print(f"worker start and load: {time.perf_counter() - t:.2f} s")
for shape in ((4, 4), (1024, 4096)):
    x = torch.randn(*shape, device="cuda"); impl(x)
    t = time.perf_counter()
    for _ in range(20):
        impl(x)
    print(f"call on {shape}: {1e3 * (time.perf_counter() - t) / 20:.1f} ms")
impl.close()
PY
} > "$out/overhead.log" 2>&1
tail -5 "$out/overhead.log"
