"""Time ``lse-fuzz grade`` on a batch of many candidates, as a grading run of generated kernels would.

    python bench/grade_at_scale.py [--source DIR] [--copies 4 | --count N] [--triton-only] [-j 8] [--work DIR]
                                   [-- extra grade options]

The batch is every candidate under ``--source`` ``--copies`` times over: by default the planted
candidates of ``tests/implementations/candidates`` (correct kernels, wrong ones, crashing, hanging,
cheating and unloadable ones); ``--source tests/implementations/correct`` gives a batch of correct
kernels in many styles (the throughput a grader of mostly-correct generated kernels sees). Each copy gets a comment
naming it inside every function body: Triton keys its compile cache on a kernel's source, so the
copies are compiled afresh, as distinct generated kernels would be, instead of hitting the cache.
``--count N`` makes a batch of exactly N candidates instead, copying the files in turn;
``--triton-only`` takes only the files that define a ``@triton.jit`` kernel (the costly kind on a
GPU, where every launch configuration compiles on the host).
Prints the wall time, candidates per minute and the count of each verdict; the grade reports
(``grade.jsonl``, ``grade.csv``) are left in ``--work``/report.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CANDIDATES = ROOT / "tests" / "implementations" / "candidates"


def distinct_copy(source: str, label: str) -> str:
    """``source`` with a ``# label`` comment as the first line of every function body."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return f"# {label}\n{source}"  # an unloadable candidate stays unloadable
    lines = source.splitlines(keepends=True)
    starts = sorted({node.body[0].lineno for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body[0].lineno > node.lineno},
                    reverse=True)
    for lineno in starts:
        body_line = lines[lineno - 1]
        indent = body_line[: len(body_line) - len(body_line.lstrip())]
        lines.insert(lineno - 1, f"{indent}# {label}\n")
    return f"# {label}\n" + "".join(lines)


def sources(source: Path = CANDIDATES, *, triton_only: bool = False) -> list[Path]:
    """The candidate files under ``source`` (not ``_``-prefixed), only those defining a Triton kernel
    when ``triton_only``."""
    found = [path for path in sorted(source.glob("*.py")) if not path.name.startswith("_")]
    if triton_only:
        found = [path for path in found if "@triton.jit" in path.read_text() or "@triton.autotune" in path.read_text()]
    return found


def build_batch(directory: Path, copies: int, source: Path = CANDIDATES, *, count: int | None = None,
                triton_only: bool = False) -> list[Path]:
    """``copies`` copies of every file of ``source``; or, with ``count``, ``count`` copies in all,
    the files taken in turn (the first files get one more copy when ``count`` is not a multiple)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = sources(source, triton_only=triton_only)
    order = ([(path, k) for path in files for k in range(copies)] if count is None
             else [(files[i % len(files)], i // len(files)) for i in range(count)])
    made = []
    for path, k in order:
        target = directory / f"{path.stem}_copy{k}.py"
        target.write_text(distinct_copy(path.read_text(), f"copy {k} of {path.name}"))
        made.append(target)
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=CANDIDATES,
                        help="the folder of candidates to copy (default tests/implementations/candidates)")
    parser.add_argument("--copies", type=int, default=4, help="copies of each planted candidate (default 4)")
    parser.add_argument("--count", type=int, default=None, metavar="N",
                        help="exactly N candidates in all, the files copied in turn (instead of --copies)")
    parser.add_argument("--triton-only", action="store_true", help="only the files that define a Triton kernel")
    parser.add_argument("-j", "--jobs", type=int, default=8, help="candidates graded at once (default 8)")
    parser.add_argument("--work", type=Path, help="where the batch and the report go (default: a temporary folder)")
    parser.add_argument("grade_options", nargs="*", help="more `lse-fuzz grade` options, after --")
    args = parser.parse_args(argv)
    if args.copies < 1 or args.jobs < 1 or (args.count is not None and args.count < 1):
        parser.error("--copies, --count and -j take integers >= 1")
    if not args.source.is_dir() or not sources(args.source, triton_only=args.triton_only):
        parser.error(f"--source={str(args.source)!r} is not a folder of *.py candidates"
                     + (" defining a Triton kernel" if args.triton_only else ""))
    work = args.work or Path(tempfile.mkdtemp(prefix="lse-grade-scale-"))
    batch_dir = work / "candidates"
    report_dir = work / "report"
    shutil.rmtree(batch_dir, ignore_errors=True)
    batch = build_batch(batch_dir, args.copies, args.source.resolve(), count=args.count,
                        triton_only=args.triton_only)

    from bench._common import run_header
    from fuzz.validate import device as parse_device

    print(f"# {run_header(str(parse_device('auto')))}", flush=True)
    command = [sys.executable, "-m", "fuzz", "grade", str(batch_dir), "-j", str(args.jobs), "--out-dir", str(report_dir),
               "--overwrite", "-q", *args.grade_options]
    print(f"# {len(batch)} candidates: lse-fuzz {' '.join(command[3:])}", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT)
    wall = time.perf_counter() - start
    records = [json.loads(line) for line in (report_dir / "grade.jsonl").read_text().splitlines() if line.strip()]
    verdicts = collections.Counter(r["verdict"] for r in records)
    print(f"graded {len(records)} of {len(batch)} candidates in {wall:.0f} s ({60 * len(records) / wall:.1f} per minute); "
          f"grade exit code {proc.returncode}")
    print("verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))
    benched = [r["bench"]["gbps"] for r in records if isinstance(r.get("bench"), dict) and r["bench"].get("gbps")]
    if benched:
        print(f"bandwidth measured for {len(benched)} passing candidates: {min(benched)}..{max(benched)} GB/s")
    return 0 if len(records) == len(batch) else 1


if __name__ == "__main__":
    raise SystemExit(main())
