#!/usr/bin/env bash
# `lse-fuzz mutate` on a CUDA machine, within TOTAL seconds: reference:lse with the defaults (100
# examples per mutant, survivors again with 2000), and every correct Triton kernel of the false-alarm
# corpus with 100 examples per mutant and survivors again with 300 (the CPU's default re-run: the
# GPU's 2000 for twelve kernels would take hours of this machine's compiles).
#
#     [VERDICTS=verdicts.tar.gz] [LANES=4] [DEVICE=cuda] [SAME_BUDGETS=1] bash bench/gpu_mutate.sh OUT_DIR [TOTAL_SECONDS]
#
# The targets run in LANES parallel lanes (reference:lse alone in the first), each `mutate -j` a share
# of the CPUs (compiles are the cost; the pool spreads each run's drivers over the visible GPUs).
# Verdicts go to one cache: VERDICTS, a tarball an earlier call wrote, continues from its verdicts
# (a survivor stopped in its re-run starts at the re-run). SAME_BUDGETS=1 gives reference:lse the
# corpus's budgets too. DEVICE=cpu tries the script here. Writes OUT_DIR/mutate.log (date,
# device, versions, each command and its exit) and OUT_DIR/mutate.tar.gz (each target's
# mutation.json, mutation.md and log, and the verdict cache).
set -uo pipefail
out=${1:?usage: bash bench/gpu_mutate.sh OUT_DIR [TOTAL_SECONDS]}
total=${2:-560}
began=$(date +%s)
left() { echo $(( total - ($(date +%s) - began) )); }
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
work=/tmp/lse-mutate
mkdir -p "$out" "$work/verdicts" "$work/reports"
[[ -n "${VERDICTS:-}" ]] && tar -xzf "$VERDICTS" -C "$work" verdicts
lanes=${LANES:-4}
share=$(( ($(nproc) - 2) / lanes )); (( share < 1 )) && share=1
log="$out/mutate.log"
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi 2>/dev/null --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch, triton, hypothesis, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "GPUs", torch.cuda.device_count())'
  echo "host CPUs: $(nproc); lanes: $lanes; mutants at once per lane: $share; tree: $(git rev-parse --short HEAD 2>/dev/null)"
  echo "verdicts kept from an earlier call: $(find "$work/verdicts" -name '*.json' | wc -l)"
} > "$log" 2>&1

corpus=(two_pass exp2_based multi_row last_tile_mask online_single_pass float64_accumulate half_output
        split_row tutorial_whole_row heuristics autotuned reduce_combine)
declare -a lane_targets
lane_targets[0]="reference:lse"
i=0
for name in "${corpus[@]}"; do
  lane=$(( 1 + i % (lanes - 1) )); i=$(( i + 1 ))
  lane_targets[$lane]="${lane_targets[$lane]:-} tests/implementations/correct/$name.py:lse"
done

run_lane() {
  for target in $1; do
    local name=${target%:lse}; name=${name##*/}; name=${name%.py}
    local options=(--device "${DEVICE:-cuda}" -j "$share" -q --cache-dir "$work/verdicts" --out-dir "$work/reports/$name")
    [[ $target == reference:lse && -z "${SAME_BUDGETS:-}" ]] || options+=(--budget 100 --thorough-budget 300)
    local seconds; seconds=$(left); (( seconds < 30 )) && { echo "$name: not started (time)" >> "$log"; continue; }
    local start; start=$(date +%s)
    timeout "$seconds" python3 -m fuzz mutate "$target" "${options[@]}" > "$work/reports/$name.log" 2>&1
    echo "$name: exit $? after $(( $(date +%s) - start )) s: python -m fuzz mutate $target ${options[*]/$work/WORK}" >> "$log"
  done
}

for lane in $(seq 0 $(( lanes - 1 ))); do
  run_lane "${lane_targets[$lane]:-}" &
done
wait
echo "done after $(( $(date +%s) - began )) s; verdicts kept: $(find "$work/verdicts" -name '*.json' | wc -l)" >> "$log"
grep -h -E "^## lse-fuzz mutate|^\*\*lse-fuzz kills" "$work"/reports/*/mutation.md 2>/dev/null >> "$log"
tar -czf "$out/mutate.tar.gz" -C "$work" verdicts reports
cat "$log"
