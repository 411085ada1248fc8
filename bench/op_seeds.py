"""Merge and combine kernels x seeds, each run as ``lse-fuzz check --op`` runs it: false alarms and kills.

    python bench/op_seeds.py [--seeds 20] [--first-seed 0] [--budget 200] [--jobs 2] [--device cpu]
                             [--only NAME,...] [--out FILE] [--resume]

Each row of :data:`RUNS` is a target, its op, the LSE base it is declared with and the verdict it
must get: every correct merge and combine of ``tests/implementations/merge_correct`` (and the
project's own kernels, in both bases) must pass on every seed; a base-2 kernel declared as natural
logs, and each bundled merge mutant, must fail on every seed. One run is one child process
(:func:`fuzz.merge.child_run.run_in_child`), ``--jobs`` at once. Records go to ``--out`` as JSON
lines (appended as they finish; ``--resume`` skips those there); the table (target, runs, as
expected, seconds) is printed at the end. Exit code 0 when every run got its expected verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CORRECT = "tests/implementations/merge_correct"
# (name, target, op, declared base, expected verdict)
RUNS = (
    ("torch_float64", f"{CORRECT}/torch_float64.py:merge_state", "merge_state", "e", "pass"),
    ("torch_logsumexp_stack", f"{CORRECT}/torch_logsumexp_stack.py:merge_state", "merge_state", "e", "pass"),
    ("scipy_merge", f"{CORRECT}/scipy_merge.py:merge_state", "merge_state", "e", "pass"),
    ("triton_per_head", f"{CORRECT}/triton_per_head.py:merge_state", "merge_state", "e", "pass"),
    ("triton_per_head_base2", f"{CORRECT}/triton_per_head.py:merge_state_base2", "merge_state", "2", "pass"),
    ("reference_merge", "reference:merge_state", "merge_state", "e", "pass"),
    ("reference_merge_base2", f"{CORRECT}/reference_base2.py:merge_state", "merge_state", "2", "pass"),
    ("reference_merge_base2_undeclared", f"{CORRECT}/reference_base2.py:merge_state", "merge_state", "e", "fail"),
    ("torch_combine", f"{CORRECT}/torch_combine.py:combine", "combine", "e", "pass"),
    ("torch_combine_base2", f"{CORRECT}/torch_combine.py:combine_base2", "combine", "2", "pass"),
    ("reference_combine", "reference:combine", "combine", "e", "pass"),
    ("reference_combine_base2", f"{CORRECT}/reference_base2.py:combine", "combine", "2", "pass"),
    ("reference_combine_base2_undeclared", f"{CORRECT}/reference_base2.py:combine", "combine", "e", "fail"),
    *((name, f"mutants.patched:{name}", "merge_state", "e", "fail") for name in (
        "merge_no_empty_guard", "merge_finite_sentinel", "merge_exp2_on_natural_logs",
        "merge_weights_not_renormalized", "merge_lse_stride_ignored")),
)


def _run(row: tuple, seed: int, args: argparse.Namespace, scratch: Path) -> dict:
    from fuzz.merge.child_run import run_in_child

    name, target, op, base, expected = row
    options = {"op": op, "target": target, "budget": args.budget, "seed": seed, "device": args.device,
               "lse_base": base, "checks": None, "dtypes": None, "profile": None, "shrink_seconds": None,
               "reproducer_dir": str(scratch / "reproducers")}
    started = time.perf_counter()
    ended = run_in_child(options, timeout=args.timeout)
    verdict = None if ended.verdict is None else ended.verdict.value
    return {"name": name, "target": target, "op": op, "lse_base": base, "seed": seed, "expected": expected,
            "verdict": verdict, "check": (ended.result or {}).get("check"), "as_expected": verdict == expected,
            "seconds": round(time.perf_counter() - started, 2), "budget": args.budget, "device": args.device,
            "report": ended.text if verdict != expected else None, "internal": ended.internal}


def _table(records: list[dict]) -> str:
    lines = ["| run | op | base | expected | runs | as expected | checks that failed | seconds (median) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, *_ in RUNS:
        mine = [r for r in records if r["name"] == name]
        if not mine:
            continue
        first = mine[0]
        checks = sorted({r["check"] for r in mine if r["check"]})
        seconds = sorted(r["seconds"] for r in mine)[len(mine) // 2]
        lines.append(f"| {name} | {first['op']} | {first['lse_base']} | {first['expected']} | {len(mine)} | "
                     f"{sum(r['as_expected'] for r in mine)} | {', '.join(checks) or '-'} | {seconds:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--only", default=None, help="comma-separated run names (default: all)")
    parser.add_argument("--out", type=Path, default=Path("op-seeds.jsonl"))
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    rows = [row for row in RUNS if args.only is None or row[0] in args.only.split(",")]
    done = [json.loads(line) for line in args.out.read_text().splitlines()] if args.resume and args.out.exists() else []
    seen = {(r["name"], r["seed"]) for r in done}
    jobs = [(row, seed) for seed in range(args.first_seed, args.first_seed + args.seeds) for row in rows
            if (row[0], seed) not in seen]
    scratch = args.out.parent / (args.out.stem + "-files")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool, args.out.open("a") as out:
        for record in pool.map(lambda job: _run(*job, args, scratch), jobs):
            out.write(json.dumps(record, sort_keys=True) + "\n")
            out.flush()
            done.append(record)
            print(f"{record['name']} seed {record['seed']}: {record['verdict']} {record['check'] or ''} "
                  f"({record['seconds']:.1f} s)", file=sys.stderr, flush=True)
    print(_table(done))
    return 0 if all(r["as_expected"] for r in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
