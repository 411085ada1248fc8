#!/usr/bin/env bash
# Where a cold `lse-fuzz mutants` spends its time on a CUDA host: one GPU and 16 CPUs, -j 14.
#
#     bash bench/gpu_mutants_time.sh OUT_DIR
#
# Writes OUT_DIR/<step>.log for each step:
#   default   the analysis as shipped, from an empty Triton cache, with a timeline of the jobs
#             (bench/mutants_timeline.py), the launch variants of the run (LSE_FUZZ_VARIANTS) and its
#             reports in OUT_DIR/default-report (mutation.json: each mutant's killing check)
#   warm      the same again on the cache the first run filled: what is left without compiling
#   part      one gate part alone (63 examples of the mutants' base), cold: seconds per compile
#             without the other jobs' load
#   bytecode  `python -m compileall` over the installed packages first (what pip does at install
#             time; some images turn bytecode off), then the first step again, cold
set -uo pipefail
out=${1:?usage: bash bench/gpu_mutants_time.sh OUT_DIR}
mkdir -p "$out"; out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
one=(env CUDA_VISIBLE_DEVICES=0 taskset -c 0-15)
steps=${STEPS:-default warm part bytecode}
header() {
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  python3 -c 'import torch, triton, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  echo "tree ${TREE:-unknown}; one GPU, CPUs 0-15; PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}"
}
wants() { [[ " $steps " == *" $1 "* ]]; }
cold() {  # STEP [ARGS]: the analysis from an empty Triton cache
  local cache step=$1; shift; cache=$(mktemp -d)
  { header; echo "# TRITON_CACHE_DIR=EMPTY ${one[*]} python3 bench/mutants_timeline.py --device cuda -j 14 $*"
    start=$(date +%s.%N)
    TRITON_CACHE_DIR=$cache LSE_FUZZ_VARIANTS=$out/$step-variants.jsonl "${one[@]}" timeout 240 \
      python3 bench/mutants_timeline.py --device cuda -j 14 "$@"
    echo "exit $? after $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s; binaries in the cache: $(find "$cache" -name '__grp__*.json' | wc -l)"
  } > "$out/$step.log" 2>&1
  tail -3 "$out/$step.log" >&2
  echo "$cache"
}
if wants default; then cache=$(cold default --out-dir "$out/default-report" | tail -1); fi
if wants warm; then
  { header; echo "# the same, on the Triton cache the cold run filled"
    start=$(date +%s.%N)
    TRITON_CACHE_DIR=${cache:?the warm step needs the default step first} "${one[@]}" timeout 240 \
      python3 bench/mutants_timeline.py --device cuda -j 14
    echo "exit $? after $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s"
  } > "$out/warm.log" 2>&1
  tail -2 "$out/warm.log"
fi
if wants part; then
  cache=$(mktemp -d)
  { header; echo "# TRITON_CACHE_DIR=EMPTY ${one[*]} python3 -m fuzz check mutants.patched:unmutated --device cuda --parts 1 --budget 63"
    start=$(date +%s.%N)
    TRITON_CACHE_DIR=$cache LSE_FUZZ_VARIANTS=$out/part-variants.jsonl "${one[@]}" timeout 240 \
      python3 -m fuzz check mutants.patched:unmutated --device cuda --parts 1 --budget 63 | tail -3
    echo "exit $? after $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s; binaries: $(find "$cache" -name '__grp__*.json' | wc -l)"
  } > "$out/part.log" 2>&1
  tail -2 "$out/part.log"
fi
if wants bytecode; then
  start=$(date +%s)
  site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
  python3 -m compileall -q -j 16 "$site" fuzz reference mutants > /dev/null 2>&1
  echo "compileall of $site: $(( $(date +%s) - start )) s" > "$out/compileall.log"
  cold bytecode > /dev/null
  tail -3 "$out/bytecode.log"
fi
