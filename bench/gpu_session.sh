#!/usr/bin/env bash
# One lease of a CUDA machine, in one command: the mutation analysis from a cold Triton cache, the
# GPU tests, and as much of the false-alarm campaign as the time left allows.
#
#     bash bench/gpu_session.sh OUT_DIR [CAMPAIGN_SECONDS]
#
# Writes seven files to OUT_DIR (header.txt, mutants.log, mutation.json, mutation.md, gpu-tests.log,
# campaign.jsonl, campaign.log); every log starts with the date, the device and the versions.
set -uo pipefail
out=${1:?usage: bash bench/gpu_session.sh OUT_DIR [CAMPAIGN_SECONDS]}
campaign_seconds=${2:-240}
mkdir -p "$out" /tmp/lse-campaign
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
workers=$(( $(nproc) - 2 ))

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch, triton, hypothesis, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "GPUs", torch.cuda.device_count())'
  echo "host CPUs: $(nproc); workers: $workers"
  git log -1 --format="commit %H %s" 2>/dev/null || true
} > "$out/header.txt" 2>&1
cat "$out/header.txt"

echo "== mutation analysis (cold Triton cache)"
rm -rf ~/.triton/cache
{ cat "$out/header.txt"; echo "# time python -m fuzz mutants --device cuda -j $workers --no-progress"; } > "$out/mutants.log"
start=$(date +%s)
timeout 300 python3 -m fuzz mutants --device cuda -j "$workers" --no-progress --out-dir /tmp/lse-mutants >> "$out/mutants.log" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/mutants.log"
cp /tmp/lse-mutants/mutation.json /tmp/lse-mutants/mutation.md "$out/" 2>/dev/null
tail -30 "$out/mutants.log"

echo "== GPU tests"
{ cat "$out/header.txt"; echo "# pytest -m gpu"; } > "$out/gpu-tests.log"
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests >> "$out/gpu-tests.log" 2>&1
echo "exit $?" | tee -a "$out/gpu-tests.log"
tail -5 "$out/gpu-tests.log"

echo "== false-alarm campaign (${campaign_seconds} s)"
{ cat "$out/header.txt"; echo "# python bench/campaign.py tests/implementations/correct --seeds 100 --workers $workers --deadline $campaign_seconds -- --device cuda"; } > "$out/campaign.log"
timeout $(( campaign_seconds + 150 )) python3 bench/campaign.py tests/implementations/correct --seeds 100 \
  --workers "$workers" --deadline "$campaign_seconds" --out /tmp/lse-campaign/campaign.jsonl -- --device cuda \
  >> "$out/campaign.log" 2>&1
echo "exit $?" | tee -a "$out/campaign.log"
cp /tmp/lse-campaign/campaign.jsonl "$out/" 2>/dev/null
tail -40 "$out/campaign.log"
