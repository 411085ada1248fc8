#!/usr/bin/env bash
# The memory phase on a GPU: `lse-fuzz check --device cuda` of correct kernels, the memory doubles and
# the memory mutants, AT_ONCE at a time (default 4), each record's verdict, check, total seconds and
# memory-phase seconds; then a cold `lse-fuzz mutants --device cuda -j 14` (every bundled mutant).
#
#     [AT_ONCE=4] [TARGETS="T1 T2 ..."] bash bench/gpu_memory_phase.sh OUT_DIR
#
# Writes OUT_DIR/header.txt, checks.tsv (target, verdict, check, seconds, memory seconds, what the
# phase ran), check-N.txt (each report), mutants.txt.
set -uo pipefail
out=${1:?usage: bash bench/gpu_memory_phase.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU"
  git log -1 --format=%h 2>/dev/null
  python3 -c 'import torch, triton, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  (command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer) 2>/dev/null; } > "$out/header.txt" 2>&1
targets=(${TARGETS:-reference:lse
  tests/implementations/correct/split_row.py tests/implementations/correct/tutorial_whole_row.py
  tests/implementations/correct/autotuned.py tests/implementations/correct/libdevice_log1p.py
  tests/implementations/correct/two_pass.py tests/implementations/correct/online_single_pass.py
  tests/implementations/doubles/reads_past.py tests/implementations/doubles/reads_unwritten.py
  mutants.patched:unmasked_tail_load mutants.patched:grid_without_row_guard
  mutants.patched:store_past_output mutants.patched:skipped_empty_partial})
echo "# python3 -m lse_fuzz check TARGET --device cuda --json check-N.json, ${AT_ONCE:-4} at a time" > "$out/checks.tsv"
printf 'target\tverdict\tcheck\tseconds\tmemory_s\tran\n' >> "$out/checks.tsv"
i=0
for target in "${targets[@]}"; do
  ( python3 -m lse_fuzz check "$target" --device cuda --json "$out/check-$i.json" > "$out/check-$i.txt" 2>&1
    python3 - "$target" "$out/check-$i.json" >> "$out/checks.tsv" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[2]))
except Exception as exc:
    print(f"{sys.argv[1]}\tno record: {exc}"); raise SystemExit
m = r.get("memory") or {}
print("\t".join(str(v) for v in (sys.argv[1], r["verdict"], r.get("check"), r["seconds"], m.get("seconds"), m.get("ran"))))
PY
  ) &
  i=$((i+1))
  if (( i % ${AT_ONCE:-4} == 0 )); then wait; fi
done
wait
start=$(date +%s)
python3 -m lse_fuzz mutants --device cuda -j 14 --out-dir "$out/mutants-report" > "$out/mutants.txt" 2>&1
echo "exit $? in $(( $(date +%s) - start )) s" >> "$out/mutants.txt"
rm -rf "$out/mutants-report"
