#!/usr/bin/env bash
# One lease of a CUDA machine (every GPU of it: the pools spread their drivers over the visible GPUs),
# in one command of at most TOTAL seconds: the mutation analysis from a
# cold Triton cache, as much of the false-alarm campaign as the time left allows, and the GPU tests.
#
#     [STEPS="mutants campaign tests"] [RESUME=runs.jsonl] [RESERVE=200] bash bench/gpu_session.sh OUT_DIR [TOTAL_SECONDS]
#
# Writes up to seven files to OUT_DIR (header.txt, mutants.log, mutation.json, mutation.md, campaign.log,
# campaign.jsonl, gpu-tests.log); every log starts with the date, the device and the versions.
# STEPS picks the steps (default all three). RESUME continues a campaign from the runs of an earlier
# one (a committed campaign.jsonl, or /tmp/lse-campaign/campaign.jsonl of an earlier call on the
# same machine): those runs are skipped and the new ones appended. RESERVE is the seconds kept back
# after the campaign's last start, for the runs in flight to finish (and the tests).
set -uo pipefail
out=${1:?usage: bash bench/gpu_session.sh OUT_DIR [TOTAL_SECONDS]}
total=${2:-560}
began=$(date +%s)
left() { echo $(( total - ($(date +%s) - began) )); }
mkdir -p "$out" /tmp/lse-campaign
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
workers=$(( $(nproc) - 2 ))
steps=${STEPS:-mutants campaign tests}
reserve=${RESERVE:-200}
wants() { [[ " $steps " == *" $1 "* ]]; }

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch, triton, hypothesis, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "GPUs", torch.cuda.device_count())'
  echo "host CPUs: $(nproc); workers: $workers"
} > "$out/header.txt" 2>&1
cat "$out/header.txt"

if wants mutants; then
echo "== mutation analysis (cold Triton cache)"
rm -rf ~/.triton/cache
{ cat "$out/header.txt"; echo "# time python -m fuzz mutants --device cuda -j $workers -q"; } > "$out/mutants.log"
start=$(date +%s)
timeout 300 python3 -m fuzz mutants --device cuda -j "$workers" -q --out-dir /tmp/lse-mutants >> "$out/mutants.log" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/mutants.log"
cp /tmp/lse-mutants/mutation.json /tmp/lse-mutants/mutation.md "$out/" 2>/dev/null
tail -25 "$out/mutants.log"
fi

# Runs in flight at the deadline finish (a cold Triton kernel run can take a minute or two here).
if wants campaign; then
resume=()
if [[ -n "${RESUME:-}" ]]; then
  [[ "$RESUME" -ef /tmp/lse-campaign/campaign.jsonl ]] || cp "$RESUME" /tmp/lse-campaign/campaign.jsonl
  resume=(--resume)
fi
deadline=$(( $(left) - reserve )); (( deadline < 60 )) && deadline=60
echo "== false-alarm campaign (no run starts after ${deadline} s)"
{ cat "$out/header.txt"; echo "# python bench/campaign.py tests/implementations/correct --seeds 200 --workers $workers --deadline $deadline ${resume[*]} -- --device cuda"; } > "$out/campaign.log"
timeout $(( deadline + reserve - 20 )) python3 bench/campaign.py tests/implementations/correct --seeds 200 \
  --workers "$workers" --deadline "$deadline" "${resume[@]}" --out /tmp/lse-campaign/campaign.jsonl -- --device cuda \
  >> "$out/campaign.log" 2>&1
echo "exit $?" | tee -a "$out/campaign.log"
cp /tmp/lse-campaign/campaign.jsonl "$out/" 2>/dev/null
tail -30 "$out/campaign.log"
fi

wants tests || exit 0
remaining=$(left)
echo "== GPU tests (${remaining} s left)"
{ cat "$out/header.txt"; echo "# pytest -m gpu"; } > "$out/gpu-tests.log"
if (( remaining > 30 )); then
  timeout $(( remaining - 10 )) python3 -m pytest -q -m gpu -p no:cacheprovider tests >> "$out/gpu-tests.log" 2>&1
  echo "exit $?" | tee -a "$out/gpu-tests.log"
else
  echo "not run: no time left" | tee -a "$out/gpu-tests.log"
fi
tail -5 "$out/gpu-tests.log"
