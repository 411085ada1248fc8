#!/usr/bin/env bash
# The attention-state merge ops on a CUDA host, in one call of at most 9 minutes:
#
#     bash bench/gpu_merge_session.sh OUT_DIR
#
# Writes OUT_DIR/<step>.log and the records of each step:
#   device    bench/merge_state_device.py --device cuda: the reference merge kernel within the model
#   mutants   lse-fuzz mutants --op merge_state --device cuda: the gate and the five merge mutants
#   seeds     bench/op_seeds.py --device cuda: every correct merge and combine (both bases), the base-2
#             kernels undeclared and the merge mutants, SEEDS seeds (default 3) at the default budget
# STEPS picks steps (default "device mutants seeds"); SEEDS, FIRST_SEED, JOBS (default 8) the seeds' run.
set -uo pipefail
out=${1:?usage: bash bench/gpu_merge_session.sh OUT_DIR}
mkdir -p "$out"; out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
steps=${STEPS:-device mutants seeds}
header() {
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  python3 -c 'import torch, triton, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  echo "tree ${TREE:-unknown}"
}
wants() { [[ " $steps " == *" $1 "* ]]; }
timed() {  # STEP SECONDS COMMAND...: the command's output and exit status in OUT_DIR/STEP.log
  local step=$1 limit=$2; shift 2
  { header; echo "# $*"; start=$(date +%s.%N)
    timeout "$limit" "$@"
    echo "exit $? after $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s"
  } > "$out/$step.log" 2>&1
  tail -4 "$out/$step.log"
}
if wants device; then timed device 60 python3 bench/merge_state_device.py --device cuda; fi
if wants mutants; then
  timed mutants 150 python3 -m fuzz mutants --op merge_state --device cuda -j 6 --out-dir "$out/mutants"
fi
if wants seeds; then
  timed seeds 300 python3 bench/op_seeds.py --device cuda --seeds "${SEEDS:-3}" --first-seed "${FIRST_SEED:-0}" \
    --jobs "${JOBS:-8}" --out "$out/op-seeds-cuda.jsonl"
fi
