#!/usr/bin/env bash
# The real-world adapters (examples/real_world/) on a CUDA machine that has no package index: the
# libraries are installed from wheels carried in .whl-real-world/, then every adapter is fuzzed with
# `python3 -m fuzz check ... --device cuda` at each seed, all adapters of a seed side by side.
#
#     [SEEDS="0 1"] [BUDGET=200] [RUN_SECONDS=200] [DEVICE=cuda] bash bench/real_world_gpu.sh OUT_DIR
#
# .whl-real-world/ holds py3.12 manylinux wheels fetched on a machine with an index (keep the folder
# untracked), each library and the pure-python dependencies the GPU image lacks:
#     pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#         --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#         -d .whl-real-world liger-kernel==0.8.5 fla-core==0.6.0 flag-gems==5.0.2 sqlalchemy==2.0.48 \
#         greenlet==3.5.6 quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
#         apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5
# quack also needs nvidia-cutlass-dsl-libs-cu13==4.8.1, a 92 MB wheel: where it cannot travel with
# the rest, install it into $SITE beforehand (this script keeps what $SITE already holds) or quack's
# adapter is reported as not importable.
#
# Writes 8 files to OUT_DIR: one log per adapter (a header with the date, the GPU and the versions,
# then each seed's command and output) and summary.txt (one verdict line per adapter and seed).
# Reproducers go to /tmp/lse-real-world-repro. About 2 x RUN_SECONDS plus the installs in all.
set -uo pipefail
out=${1:?usage: bash bench/real_world_gpu.sh OUT_DIR}
seeds=${SEEDS:-0 1}
budget=${BUDGET:-200}
run_seconds=${RUN_SECONDS:-200}
site=${SITE:-/tmp/lse-real-world-site}
device=${DEVICE:-cuda}  # DEVICE=cpu: a smoke test of this script on a machine without a GPU
cd "$(dirname "$0")/.."
mkdir -p "$out" "$site" /tmp/lse-real-world-repro

shopt -s nullglob
wheels=(.whl-real-world/*.whl)
if (( ${#wheels[@]} == 0 )); then
  echo "no wheels in .whl-real-world/: fetch them first (see the top of this script)" >&2
  exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" "${wheels[@]}" \
  || { echo "installing the carried wheels failed" >&2; exit 2; }
# The repository first (lse-fuzz itself), then the carried libraries; the image's torch and triton stay.
export PYTHONPATH="$PWD:$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

header() {
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 - <<'EOF'
import importlib.metadata as metadata
import sys
names = ["torch", "triton", "hypothesis", "numpy", "liger-kernel", "fla-core", "flag-gems", "quack-kernels",
         "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13"]
versions = []
for name in names:
    try:
        versions.append(f"{name} {metadata.version(name)}")
    except metadata.PackageNotFoundError:
        versions.append(f"{name} (not installed)")
print("python", sys.version.split()[0] + ";", ", ".join(versions))
EOF
}

# adapter name, then its declared contract (the one in its docstring).
adapters=(
  "torch_logsumexp|"
  "torch_compile_logsumexp|"
  "liger_cross_entropy|--contract finite --dtypes float32,float16,bfloat16 --output-dtype input"
  "fla_logsumexp|--contract finite --output-dtype float32"
  "fla_cross_entropy|--contract finite --dtypes float32,float16,bfloat16 --output-dtype float32"
  "flag_gems_logsumexp|--dtypes float32,float16,bfloat16"
  "quack_cross_entropy|--dtypes float32,float16,bfloat16 --output-dtype float32"
)

head_text=$(header 2>&1)
echo "$head_text"
: > "$out/summary.txt"
echo "$head_text" >> "$out/summary.txt"
for entry in "${adapters[@]}"; do
  echo "$head_text" > "$out/${entry%%|*}.log"
done

for seed in $seeds; do
  echo "== seed $seed (budget $budget, at most ${run_seconds} s per adapter)"
  pids=()
  for entry in "${adapters[@]}"; do
    name=${entry%%|*}
    options=${entry#*|}
    (
      command="python3 -m fuzz check examples/real_world/$name.py:lse --device $device --seed $seed --budget $budget $options --reproducers /tmp/lse-real-world-repro"
      log=$(mktemp)
      start=$(date +%s)
      # shellcheck disable=SC2086  # the options are words on purpose
      timeout "$run_seconds" python3 -m fuzz check "examples/real_world/$name.py:lse" --device "$device" --seed "$seed" \
        --budget "$budget" $options --reproducers /tmp/lse-real-world-repro > "$log" 2>&1
      status=$?
      { echo; echo "# seed $seed: $command"; cat "$log"; echo "exit $status after $(( $(date +%s) - start )) s"; } >> "$out/$name.log"
      verdict=$(grep -m1 -E '^(PASS|FAIL|ERROR|CRASH|TIMEOUT|LOAD_ERROR|INTERNAL_ERROR)\b' "$log" || tail -1 "$log")
      echo "$name seed $seed: exit $status: $verdict" >> "$out/summary.txt"
      rm -f "$log"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"
done
echo "== summary"
grep ' seed ' "$out/summary.txt"
