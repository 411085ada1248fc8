#!/usr/bin/env bash
# The real-world adapters (examples/real_world/) on a CUDA machine that has no package index: the
# libraries are installed from wheels carried in WHEELS (.whl-real-world/ by default), then every
# adapter is fuzzed with `python3 -m fuzz check ... --device cuda` at each seed, JOBS runs at a time.
#
#     [SEEDS="0 1"] [BUDGET=200] [RUN_SECONDS=100] [JOBS=4] [PARTS=2] [DEVICE=cuda] [WHEELS=DIR] \
#         bash bench/real_world_gpu.sh OUT_DIR
#
# WHEELS holds py3.12 manylinux wheels fetched on a machine with an index (keep the folder
# untracked), each library and the pure-python dependencies the GPU image lacks:
#     pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#         --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#         -d .whl-real-world liger-kernel==0.8.5 fla-core==0.6.0 flag-gems==5.0.2 sqlalchemy==2.0.48 \
#         greenlet==3.5.6 quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
#         apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5
# quack also needs nvidia-cutlass-dsl-libs-cu13==4.8.1, a 92 MB wheel: where it cannot travel with
# the rest, install it into $SITE beforehand (this script keeps what $SITE already holds) or quack's
# adapter is reported as not importable.
# TransformerEngine, flash-attn and Unsloth (te_cross_entropy, flash_attn_cross_entropy,
# unsloth_cross_entropy) add, fetched the same way:
#         transformer-engine==2.20.2 unsloth==2026.10.9 unsloth-zoo==2026.10.9 transformers==5.17.0 \
#         tokenizers==0.23.3 safetensors==0.8.0 huggingface_hub==1.33.0 hf-xet==1.8.0 accelerate==1.16.0 \
#         peft==0.21.2 trl==1.15.0 datasets==4.8.5 pyarrow==26.0.1 dill==0.4.1 multiprocess==0.70.19 \
#         xxhash==4.1.0 fsspec==2026.2.0 pandas==3.1.1 python-dateutil==2.9.0.post0 torchao==0.18.0 \
#         tyro==1.0.17 docstring_parser==0.18.0 typeguard==4.6.1 sentencepiece==0.2.3 hf_transfer==0.1.9 \
#         msgspec==0.23.0 pillow==13.0.0 einops==0.8.2 regex==2026.5.9 aiohttp==3.14.5 aiosignal==1.4.0 \
#         aiohappyeyeballs==2.7.1 frozenlist==1.8.0 multidict==7.2.1 propcache==0.5.4 yarl==1.25.1 \
#         httpx==0.29.0 httpcore==1.0.9 h11==0.16.0 anyio==4.16.0 typer==0.29.2 shellingham==1.5.4 rich==15.0.0
# and flash-attn's wheel, which PyPI does not have (only its source, whose build compiles CUDA): build
# it without the CUDA extension, as a pure-python wheel, on any machine with the index:
#     FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE FLASH_ATTENTION_FORCE_BUILD=TRUE pip wheel --no-deps \
#         --no-build-isolation -w WHEELS flash-attn==2.8.3.post2
# transformer_engine goes to a site of its own ($SITE-te), on the path of its adapter's runs alone:
# without TE's CUDA libraries the package raises on import, and peft (so Unsloth) imports any
# transformer_engine it can find.
#
# Writes two files to OUT_DIR (a machine that sends back only a few files loses none): runs.log (a
# header with the date, the GPU and the versions, then each run's command and output, in the order
# the runs end) and summary.txt (the header, then one verdict line per adapter and seed).
# Reproducers go to /tmp/lse-real-world-repro. At most ceil(10 x seeds / JOBS) x RUN_SECONDS (500 s
# by default) plus the installs.
set -uo pipefail
out=${1:?usage: bash bench/real_world_gpu.sh OUT_DIR}
seeds=${SEEDS:-0 1}
budget=${BUDGET:-200}
run_seconds=${RUN_SECONDS:-100}
jobs=${JOBS:-4}
parts=${PARTS:-2}
site=${SITE:-/tmp/lse-real-world-site}
device=${DEVICE:-cuda}  # DEVICE=cpu: a smoke test of this script on a machine without a GPU
cd "$(dirname "$0")/.."
wheel_dir=${WHEELS:-.whl-real-world}
site_te="$site-te"
mkdir -p "$out" "$site" "$site_te" /tmp/lse-real-world-repro

shopt -s nullglob
wheels=() te_wheels=()
for wheel in "$wheel_dir"/*.whl; do
  case $(basename "$wheel") in
    transformer_engine-*) te_wheels+=("$wheel") ;;
    *) wheels+=("$wheel") ;;
  esac
done
if (( ${#wheels[@]} == 0 )); then
  echo "no wheels in $wheel_dir/: fetch them first (see the top of this script)" >&2
  exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" "${wheels[@]}" \
  || { echo "installing the carried wheels failed" >&2; exit 2; }
if (( ${#te_wheels[@]} > 0 )); then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site_te" "${te_wheels[@]}" \
    || { echo "installing the carried transformer_engine wheel failed" >&2; exit 2; }
fi
# The repository first (lse-fuzz itself), then the carried libraries; the image's torch and triton stay.
export PYTHONPATH="$PWD:$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

header() {
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  PYTHONPATH="$PYTHONPATH:$site_te" python3 - <<'EOF'
import importlib.metadata as metadata
import sys
names = ["torch", "triton", "hypothesis", "numpy", "liger-kernel", "fla-core", "flag-gems", "quack-kernels",
         "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13", "flash-attn", "unsloth", "unsloth-zoo",
         "transformers", "transformer-engine"]
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
  "te_cross_entropy|--contract finite --dtypes float32,bfloat16 --output-dtype float32"
  "flash_attn_cross_entropy|--contract finite --dtypes float32,float16,bfloat16 --output-dtype float32"
  "unsloth_cross_entropy|--contract finite --dtypes float32,float16,bfloat16 --output-dtype float32"
)

head_text=$(header 2>&1)
echo "$head_text"
: > "$out/summary.txt"
echo "$head_text" >> "$out/summary.txt"
echo "$head_text" > "$out/runs.log"

# One run: its command and output go to runs.log and a verdict line to summary.txt.
run_one() {
  local name=$1 seed=$2 options=$3 log start status verdict path=$PYTHONPATH
  log=$(mktemp)
  start=$(date +%s)
  [[ $name == te_cross_entropy ]] && path="$PYTHONPATH:$site_te"
  # shellcheck disable=SC2086  # the options are words on purpose
  PYTHONPATH=$path timeout "$run_seconds" python3 -m fuzz check "examples/real_world/$name.py:lse" --device "$device" --seed "$seed" \
    --budget "$budget" --parts "$parts" $options --reproducers /tmp/lse-real-world-repro > "$log" 2>&1
  status=$?
  verdict=$(grep -m1 -E '^(PASS|FAIL|ERROR|CRASH|TIMEOUT|LOAD_ERROR|INTERNAL_ERROR)\b' "$log" || tail -1 "$log")
  # The whole block is made first and appended at once: two runs may end together.
  { echo; echo "# $name, seed $seed: python3 -m fuzz check examples/real_world/$name.py:lse --device $device --seed $seed" \
      "--budget $budget --parts $parts $options"; cat "$log"; echo "exit $status after $(( $(date +%s) - start )) s"; } \
    > "$log.block"
  cat "$log.block" >> "$out/runs.log"
  echo "$name seed $seed: exit $status: $verdict" >> "$out/summary.txt"
  rm -f "$log" "$log.block"
}

# At most $jobs runs at once, each in $parts worker processes: every run may allocate a
# huge-offset input (several GiB) on the one GPU, and the host has 16 cores.
echo "== seeds $seeds (budget $budget, at most ${run_seconds} s per run, $jobs runs at once)"
running=0
for seed in $seeds; do
  for entry in "${adapters[@]}"; do
    if (( running >= jobs )); then
      wait -n
      running=$(( running - 1 ))
    fi
    run_one "${entry%%|*}" "$seed" "${entry#*|}" &
    running=$(( running + 1 ))
  done
done
wait
echo "== summary"
grep ' seed ' "$out/summary.txt"
