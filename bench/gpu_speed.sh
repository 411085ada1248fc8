#!/usr/bin/env bash
# The fuzzer's speed on a CUDA host, in one command: the measurements of issue "speed and scale".
#
#     [STEPS="probe mutants cold fuzzer grade1 grade2"] [COUNT=100] [CPUS1=16] [FUZZER_LIMIT=560] [COLD=TARGETS]
#     [TREE=COMMIT] bash bench/gpu_speed.sh OUT_DIR
#
# Steps, in this order (each writes OUT_DIR/STEP.log, starting with the date, the device and the versions):
#   probe   seconds to import torch and triton and to start a CUDA context, in a new process
#   mutants lse-fuzz mutants on one GPU from an empty Triton cache (and mutation.json)
#   cold    lse-fuzz check of COLD (default: four correct Triton kernels of the corpus), each alone,
#           one GPU, an empty Triton cache each: wall time and binaries compiled
#   fuzzer  bench/bench_fuzzer.py on one GPU: check, mutants and grade, each cold (an empty Triton
#           cache) and warm, stopped after FUZZER_LIMIT seconds; writes OUT_DIR/bench-fuzzer.{md,jsonl}
#   grade1  grading COUNT correct Triton candidates (the corpus's Triton files copied in turn, each
#           copy a distinct source, so nothing comes from the cache) on one GPU
#   grade2  the same batch on every GPU of the host
# "One GPU" runs see GPU 0 only and CPUS1 of the host's CPUs (taskset): a one-GPU machine of the
# same kind, whose host compiles every kernel on its own cores. grade2 gets every GPU and CPU.
set -uo pipefail
out=${1:?usage: bash bench/gpu_speed.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
steps=${STEPS:-probe mutants cold fuzzer grade1 grade2}
count=${COUNT:-100}
cpus1=${CPUS1:-16}
all_cpus=$(nproc)
(( cpus1 > all_cpus )) && cpus1=$all_cpus
one=(env CUDA_VISIBLE_DEVICES=0 taskset -c "0-$(( cpus1 - 1 ))")
jobs1=$(( cpus1 - 2 ))
jobs_all=$(( all_cpus - 4 ))
tree=${TREE:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}

header() {
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch, triton, hypothesis, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "GPUs", torch.cuda.device_count())'
  echo "tree $tree; host CPUs: $all_cpus; one-GPU runs: GPU 0 and $cpus1 CPUs"
}
header | tee "$out/header.txt"
wants() { [[ " $steps " == *" $1 "* ]]; }

if wants probe; then
  echo "== process start-up costs on this host"
  { cat "$out/header.txt"
    nvidia-smi --query-gpu=persistence_mode --format=csv,noheader | head -1 | sed 's/^/persistence mode: /'
    for code in "import torch" "import torch, triton" "import torch; torch.cuda.init()" \
                "import torch; torch.cuda.init(); torch.empty(1, device='cuda')"; do
      start=$(date +%s.%N); python3 -c "$code"
      echo "python3 -c \"$code\": $(python3 -c "import time; print(f'{time.time() - $start:.2f}')") s"
    done
  } > "$out/probe.log" 2>&1
  tail -5 "$out/probe.log"
fi

if wants mutants; then
  echo "== mutants, cold (one GPU)"
  cache=$(mktemp -d)
  { cat "$out/header.txt"; echo "# TRITON_CACHE_DIR=EMPTY ${one[*]} python3 -m fuzz mutants --device cuda -j $jobs1 -q"; } > "$out/mutants.log"
  start=$(date +%s)
  TRITON_CACHE_DIR="$cache" "${one[@]}" timeout 300 python3 -m fuzz mutants --device cuda -j "$jobs1" -q \
    --out-dir /tmp/lse-mutants >> "$out/mutants.log" 2>&1
  echo "exit $? after $(( $(date +%s) - start )) s; compiled $(find "$cache" -name '__grp__*.json' | wc -l)" >> "$out/mutants.log"
  cp /tmp/lse-mutants/mutation.json "$out/mutation.json" 2>/dev/null
  rm -rf "$cache"
  tail -3 "$out/mutants.log"
fi

if wants cold; then
  echo "== cold check, each kernel alone (one GPU)"
  { cat "$out/header.txt"; echo "# per target: TRITON_CACHE_DIR=EMPTY ${one[*]} python3 -m fuzz check TARGET --device cuda (defaults)"; } > "$out/cold.log"
  read -r -a targets <<< "${COLD:-}"
  (( ${#targets[@]} )) || targets=(tests/implementations/correct/{exp2_based,multi_row,online_single_pass,autotuned}.py:lse)
  for target in "${targets[@]}"; do
    cache=$(mktemp -d) hyp=$(mktemp -d)
    start=$(date +%s.%N)
    TRITON_CACHE_DIR="$cache" HYPOTHESIS_STORAGE_DIRECTORY="$hyp" "${one[@]}" timeout 300 \
      python3 -m fuzz check "$target" --device cuda --reproducers "$hyp/repro" > "$hyp/check.out" 2>&1
    rc=$?
    result=$(tail -1 "$hyp/check.out")
    wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
    compiled=$(find "$cache" -name '__grp__*.json' | wc -l)
    echo "$target rc=$rc wall=$wall s compiled=$compiled | $result" | tee -a "$out/cold.log"
    rm -rf "$cache" "$hyp"
  done
fi

if wants fuzzer; then
  echo "== bench_fuzzer (one GPU)"
  { cat "$out/header.txt"; echo "# ${one[*]} python3 bench/bench_fuzzer.py --device cuda -j $jobs1 --out OUT/bench-fuzzer"; } > "$out/fuzzer.log"
  "${one[@]}" timeout "${FUZZER_LIMIT:-560}" python3 bench/bench_fuzzer.py --device cuda -j "$jobs1" --out "$out/bench-fuzzer" >> "$out/fuzzer.log" 2>&1
  echo "exit $?" >> "$out/fuzzer.log"
  tail -16 "$out/fuzzer.log"
fi

grade() {  # grade NAME JOBS PREFIX...
  local name=$1 jobs=$2; shift 2
  echo "== $name: $count correct Triton candidates"
  { cat "$out/header.txt"; echo "# $* python3 bench/grade_at_scale.py --source tests/implementations/correct --triton-only --count $count -j $jobs (empty Triton cache)"; } > "$out/$name.log"
  local cache; cache=$(mktemp -d)
  TRITON_CACHE_DIR="$cache" "$@" timeout 590 python3 bench/grade_at_scale.py --source tests/implementations/correct \
    --triton-only --count "$count" -j "$jobs" --work "/tmp/lse-$name" >> "$out/$name.log" 2>&1
  echo "exit $?; compiled $(find "$cache" -name '__grp__*.json' | wc -l)" >> "$out/$name.log"
  cp "/tmp/lse-$name/report/grade.jsonl" "$out/$name.jsonl" 2>/dev/null
  rm -rf "$cache"
  tail -4 "$out/$name.log"
}
wants grade1 && grade grade1 "$jobs1" "${one[@]}"
wants grade2 && grade grade2 "$jobs_all" env
exit 0
