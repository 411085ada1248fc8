#!/usr/bin/env bash
# The hostile batch at default options, as a grader of many candidates runs it on a GPU host, timed:
# every candidate of tests/implementations/hostile and tests/implementations/candidates plus four
# correct kernels, `grade --device cpu -j JOBS` (default 8), which continues itself when a candidate
# kills the grading process (resumed here only if it gave up: exit 137), each run under LIMIT
# seconds (default 280). Python's faulthandler is on, and a
# run past its limit gets SIGABRT, so a hang leaves every thread's stack in batch.log; a process
# table is taken SNAP seconds into each run (default 200).
#
#     [JOBS=8] [LIMIT=280] [SNAP=200] bash bench/gpu_hostile_batch.sh OUT_DIR
#
# Writes OUT_DIR/header.txt, batch.log (progress and the summary, each line stamped with the seconds
# since the batch began), grade.jsonl (the records) and
# ps-runN.txt.
set -uo pipefail
out=${1:?usage: bash bench/gpu_hostile_batch.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU"
  git log -1 --format=%h 2>/dev/null
  python3 -c 'import torch, triton, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  echo "host CPUs: $(nproc); jobs: ${JOBS:-8}"; } > "$out/header.txt" 2>&1
batch=$(mktemp -d); work=$(mktemp -d)
cp tests/implementations/hostile/*.py tests/implementations/candidates/*.py "$batch/"
# detaches.py's daemon writes where its test tells it (EVIDENCE), as the CPU suite plants it.
mkdir -p "$work/evidence"; sed -i "s|^EVIDENCE = None|EVIDENCE = '$work/evidence'|" "$batch/detaches.py"
for f in two_pass online_single_pass torch_float32 tutorial_whole_row; do
  cp "tests/implementations/correct/$f.py" "$batch/zz_$f.py"
done
log="$out/batch.log"; cat "$out/header.txt" > "$log"
echo "# $(ls "$batch" | wc -l) candidates: python3 -m lse_fuzz grade BATCH --device cpu -j ${JOBS:-8}" >> "$log"
start=$(date +%s); n=0; rc=137
# Each line of the run's output with the seconds since the batch began: a record's start is its
# line's time less its own seconds, so the log shows where a batch waits.
stamp() { python3 -u -c 'import sys, time
t = float(sys.argv[1])
for line in sys.stdin:
    print(f"{time.time() - t:7.1f} {line}", end="")' "$start"; }
while [[ $rc == 137 && $n -lt 5 ]]; do
  resume=(); [[ $n -gt 0 ]] && resume=(--resume)
  ( sleep "${SNAP:-200}"; ps -eo pid,ppid,stat,etimes,pcpu,rss,cmd --forest > "$out/ps-run$n.txt" ) & snap=$!
  PYTHONFAULTHANDLER=1 timeout -s ABRT -k 15 "${LIMIT:-280}" python3 -m lse_fuzz grade "$batch" --device cpu \
    -j "${JOBS:-8}" --out-dir "$work/out" "${resume[@]}" 2>&1 | stamp >> "$log"
  rc=${PIPESTATUS[0]}; kill "$snap" 2>/dev/null
  echo "== run $n: exit $rc at $(( $(date +%s) - start )) s, $(wc -l < "$work/out/grade.jsonl" 2>/dev/null || echo 0) records" | tee -a "$log"
  n=$((n + 1))
done
cp "$work/out/grade.jsonl" "$out/" 2>/dev/null
rm -rf "$batch" "$work"
