#!/usr/bin/env bash
# Same verdict on the CPU and the GPU: the GPU half of the parity measurements, in one command.
#
#     [STEPS="diff tests wholerow grade"] [SEEDS=20] bash bench/gpu_parity.sh OUT_DIR
#
# Steps (default all):
#   diff      the interpreter's differential suite on the GPU (bench/interpreter_diff.py), its JSON
#   tests     the GPU tests of compiling (a 2**19-lane whole-row block is not a hang) and the
#             `--device cpu` tests, on a real CUDA machine
#   wholerow  the correct whole-row kernel (BLOCK = next_power_of_2(N), up to 2**20) through
#             SEEDS `lse-fuzz check` runs with default options, from a cold Triton cache
#   grade     `grade --device cpu` of the planted candidates and of the hostile batch, with the
#             options the CPU test suite grades them with, at JOBS at once (default 8); with
#             COMPARE=DIR, each is compared with DIR's grade of the same batch (bench/parity_grades.py)
# The grade step also runs on a CPU-only machine, as a GPU host would (every process seeing a CUDA
# device): PYTHONPATH=tests/implementations/simulated_cuda STEPS=grade JOBS=2 bash bench/gpu_parity.sh OUT
# Every file starts with (or sits beside header.txt giving) the date, the device and the versions.
set -uo pipefail
out=${1:?usage: bash bench/gpu_parity.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
steps=${STEPS:-diff tests wholerow grade}
jobs=${JOBS:-8}
seeds=${SEEDS:-20}
workers=$(( $(nproc) - 2 ))
wants() { [[ " $steps " == *" $1 "* ]]; }

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU"
  python3 -c 'import torch, triton, hypothesis, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__)'
  echo "host CPUs: $(nproc); workers: $workers; tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} > "$out/header.txt" 2>&1
cat "$out/header.txt"

if wants diff; then
  echo "== interpreter differential suite, GPU half"
  python3 bench/interpreter_diff.py run --device cuda --out "$out/interpreter-diff-gpu.json" 2>&1 | tail -3
fi

if wants tests; then
  echo "== GPU tests: compiling is not hanging; --device cpu on a CUDA machine"
  python3 -m pytest -q -p no:cacheprovider -m "" tests/fuzz/isolation/worker/test_compile.py \
    tests/fuzz/cli/test_device_cpu_on_gpu_host.py 2>&1 | tee "$out/gpu-tests.log" | tail -5
fi

if wants wholerow; then
  echo "== whole-row kernel, $seeds seeds, default options, cold Triton cache"
  # RESUME=FILE continues an earlier call's runs (copied to the output, then appended to);
  # DEADLINE=S starts no run after S seconds (the runs in flight finish).
  if [[ -n "${RESUME:-}" ]]; then cp "$RESUME" "$out/wholerow.jsonl"; else rm -rf ~/.triton/cache; fi
  start=$(date +%s)
  python3 bench/campaign.py tests/implementations/correct/whole_row_any_n.py --seeds "$seeds" \
    --workers "$workers" --out "$out/wholerow.jsonl" ${RESUME:+--resume} ${DEADLINE:+--deadline "$DEADLINE"} \
    -- --device cuda > "$out/wholerow.log" 2>&1
  echo "exit $? after $(( $(date +%s) - start )) s" >> "$out/wholerow.log"
  tail -4 "$out/wholerow.log"
fi

if wants grade; then
  echo "== grade --device cpu on a CUDA machine"
  python3 -m fuzz grade tests/implementations/candidates --device cpu --budget 20 --max-elements 4096 --seed 0 \
    --call-timeout 3 --memory-limit 4 -j "$jobs" -q --out /tmp/parity-candidates --overwrite > /dev/null 2>&1
  cp /tmp/parity-candidates/grade.jsonl "$out/grade-cpu-candidates.jsonl"
  batch=/tmp/parity-hostile
  rm -rf "$batch" && mkdir -p "$batch"
  for f in tests/implementations/hostile/*.py; do
    [[ $(basename "$f") == kills_the_grader.py ]] || cp "$f" "$batch/"
  done
  # detaches.py's daemon writes where its test tells it (EVIDENCE), as the CPU suite plants it
  mkdir -p "$batch-evidence"
  sed -i "s|^EVIDENCE = None|EVIDENCE = '$batch-evidence'|" "$batch/detaches.py"
  cp tests/implementations/correct/torch_float32.py "$batch/zz_torch_neighbour.py"
  cp tests/implementations/correct/two_pass.py "$batch/zz_triton_neighbour.py"
  for run in 1 2 3 4; do  # resumed after a kill, as the CPU suite does
    python3 -m fuzz grade "$batch" --device cpu --budget 8 --max-elements 1024 -j "$jobs" --no-bench --memory-limit 1 \
      --out /tmp/parity-hostile-out $([[ $run == 1 ]] && echo --overwrite || echo --resume) > /dev/null 2>&1
    [[ $? == 137 ]] || break  # only a killed grader is resumed
  done
  cp /tmp/parity-hostile-out/grade.jsonl "$out/grade-cpu-hostile.jsonl"
  for name in candidates hostile; do
    python3 bench/parity_grades.py "$out/grade-cpu-$name.jsonl" ${COMPARE:+"$COMPARE/grade-cpu-$name.jsonl"} | tail -1
  done
fi
