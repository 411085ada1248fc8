#!/usr/bin/env bash
# Time to a verdict on a GPU host (one GPU, 16 CPUs), the figures still open, in one command that
# ends within TOTAL seconds (default 530), from empty caches:
#
#     [STEPS="mutants slowest base memory alone seeds"] [TOTAL=530] [SLOWEST=NAMES] [SEEDS="7 8"] \
#         bash bench/gpu_verdict_session.sh OUT_DIR [BASE.tar.gz]
#
#   mutants  cold `lse-fuzz mutants -j 14` with its timeline (bench/gpu_mutants_time.sh, step default)
#   slowest  the slowest checks 8 at once (`bench/verdict_time.py --only SLOWEST --jobs 8`): each
#            check's verdict, time, and how long it waited for the memory phase
#   base     the same checks with the tree in BASE.tar.gz (`git archive OLD | gzip`), on this machine:
#            an A/B (skipped without BASE)
#   memory   the same checks again with `--memory` (the GPU's peak and each kind's largest process)
#   seeds    false alarms: the correct and autotuned kernels (`--only correct/,tuned.`), 8 at once, once
#            per seed of SEEDS (default "7 8"), each with `--seed K` (run after mutants, before the rest)
#   seeds-base  with seeds and BASE: each seed again from BASE's tree, right after (an A/B, each
#            seed given half the time left)
#   alone    the same checks one at a time (the 30 s target), until the time is up
#
# A step starts only while the time left can hold it. Writes OUT_DIR/header.txt, OUT_DIR/STEP.log
# and OUT_DIR/STEP.{md,jsonl} (verdict_time's), and OUT_DIR/all.tgz holding them all (for a remote runner that
# copies back a few files only).
set -uo pipefail
out=${1:?usage: bash bench/gpu_verdict_session.sh OUT_DIR [BASE.tar.gz]}
base=${2:-}
mkdir -p "$out"; out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
start=$(date +%s); total=${TOTAL:-530}
steps=${STEPS:-mutants slowest base memory alone}
slowest=${SLOWEST:-tuned.,libdevice,exp2_based,last_tile_mask,nd_middle,split_row}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
left() { echo $(( total - ($(date +%s) - start) )); }
wants() { [[ " $steps " == *" $1 "* ]] && (( $(left) > $2 )); }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
  git log -1 --format=%h 2>/dev/null; echo "steps: $steps; slowest: $slowest; base: ${base:-none}"; } > "$out/header.txt"
checks() {  # TREE_DIR STEP [OPTIONS]: the slowest checks 8 at once, from TREE_DIR
  local tree=$1 step=$2; shift 2
  (cd "$tree" && timeout $(( $(left) - 5 )) python3 bench/verdict_time.py --device cuda --sections checks \
     --set all --jobs 8 --only "$slowest" --deadline 60 --timeout 200 --out "$out/$step" "$@") \
    > "$out/$step.log" 2>&1
  echo "$step: exit $? at $(( $(date +%s) - start )) s" >> "$out/header.txt"
}
if wants mutants 120; then
  STEPS=default TREE=$(git log -1 --format=%h 2>/dev/null) bash bench/gpu_mutants_time.sh "$out/mutants" > /dev/null 2>&1
  cp "$out/mutants/default.log" "$out/mutants.log" 2>/dev/null
  echo "mutants: done at $(( $(date +%s) - start )) s" >> "$out/header.txt"
fi
seeds_from() {  # TREE_DIR NAME SEED [SECONDS]: the correct and autotuned kernels 8 at once, from TREE_DIR
  local tree=$1 name=$2 seed=$3 limit=${4:-$(left)}
  (cd "$tree" && timeout $(( limit - 5 )) python3 bench/verdict_time.py --device cuda --sections checks --set all \
     --only correct/,tuned. --jobs 8 --deadline $(( limit - 100 )) --timeout 90 --check-options "--seed $seed" \
     --out "$out/$name") > "$out/$name.log" 2>&1
  echo "$name: exit $? at $(( $(date +%s) - start )) s" >> "$out/header.txt"
}
if [[ -n "$base" ]] && [[ " $steps " == *" seeds-base "* ]]; then base_tree=$(mktemp -d); tar xzf "$base" -C "$base_tree"; fi
for seed in ${SEEDS:-7 8}; do
  wants seeds 150 || break
  if [[ -n "${base_tree:-}" ]]; then  # an A/B on this machine: each seed from this tree, then from BASE's
    half=$(( $(left) / 2 )); seeds_from "$PWD" "seed$seed" "$seed" "$half"; seeds_from "$base_tree" "base-seed$seed" "$seed"
  else
    seeds_from "$PWD" "seed$seed" "$seed"
  fi
done
wants slowest 150 && checks "$PWD" slowest
if [[ -n "$base" ]] && wants base 150; then
  tree=$(mktemp -d); tar xzf "$base" -C "$tree" && checks "$tree" base
fi
wants memory 150 && checks "$PWD" memory --memory
if wants alone 60; then
  (timeout $(( $(left) - 5 )) python3 bench/verdict_time.py --device cuda --sections alone --set all \
     --only "$slowest" --deadline $(( $(left) - 70 )) --timeout 60 --out "$out/alone") > "$out/alone.log" 2>&1
  echo "alone: exit $? at $(( $(date +%s) - start )) s" >> "$out/header.txt"
fi
tar czf "$out/all.tgz" -C "$out" --exclude=all.tgz --exclude=mutants . 2>/dev/null
cat "$out/header.txt"
