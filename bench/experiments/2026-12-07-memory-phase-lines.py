"""Where a memory phase's seconds go: each tool's probe process, its lines stamped (tree 2c56289 and after).

    python bench/experiments/2026-12-07-memory-phase-lines.py [--at-once K] [--json OUT] TARGET [TARGET ...]

In a cold `lse-fuzz mutants` on an H100 host a memory mutant's phase took 9-13 s when it ran with
few others and 17-21 s when six ran at once, while compute-sanitizer's own start is 0.1-0.3 s: the
rest is the probe process (Python, torch, the CUDA context under the tool, the target's compiles,
the probes). This starts the phase's processes as :func:`fuzz.memory.phase.start` does (memcheck
with the views past 2**31 elements, initcheck; float32 probes, then 33 x 257 and the split row in
float16 and float64), with no run's inputs to replay, each TARGET's two tools, K processes at
once (default 2: one target's pair, as in one check). It prints, per process, when its first line
came (the start-up), each probe's seconds (from its start line to the next probe's), the slowest
probes and the total. Without compute-sanitizer (a CPU), the same probes in Triton's interpreter.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fuzz.memory import phase, sanitizer  # noqa: E402
from fuzz.memory.probe import PREFIX  # noqa: E402

OPTIONS = ["--dtype", "float32", "--also", "float16,float64"]


def command(target: str, tool: str, executable: str | None, directory: str) -> tuple[list[str], dict]:
    probe = [sys.executable, "-m", "fuzz.memory.probe", target, *OPTIONS]
    handed = ["--then", directory]  # the inputs file is written at once: nothing to replay
    if executable is None:
        return [*probe, "--interpreter", "--huge", *handed], phase._environment(TRITON_INTERPRET="1")
    huge = ["--huge"] if tool == "memcheck" else []
    return ([executable, "--tool", tool, "--print-limit", str(phase.PRINT_LIMIT[tool]), "--error-exitcode", "86",
             *probe, "--device", "cuda", *huge, *handed], phase._environment())


def stamped(target: str, tool: str, executable: str | None) -> dict:
    """One process: its lines with the seconds since it was started."""
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "inputs.json").write_text("[]")
        argv, env = command(target, tool, executable, directory)
        began = time.monotonic()
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                   errors="replace")
        lines = [(round(time.monotonic() - began, 3), line.rstrip("\n")) for line in process.stdout]
        process.wait()
    return {"target": target, "tool": tool, "exit": process.returncode, "seconds": round(time.monotonic() - began, 3),
            "lines": lines}


def summary(run: dict) -> str:
    marks = [(t, line.split(" ", 3)) for t, line in run["lines"] if line.startswith(PREFIX + " ")]
    first = marks[0][0] if marks else None
    starts = [(t, words[3] if len(words) > 3 else "") for t, words in marks if len(words) > 2 and words[2] == "start"]
    ends = [t for t, _ in starts[1:]] + [run["seconds"]]
    probes = sorted(((end - t, description) for (t, description), end in zip(starts, ends)), reverse=True)
    slowest = "; ".join(f"{s:.1f} s {d}" for s, d in probes[:3])
    reports = sum(1 for _, line in run["lines"] if line.startswith("=========") or " violation " in line)
    return (f"{run['target']} {run['tool']}: exit {run['exit']}, {run['seconds']:.1f} s; first line at "
            f"{first if first is None else f'{first:.1f} s'}; first probe at "
            f"{starts[0][0] if starts else float('nan'):.1f} s; {len(starts)} probes in "
            f"{sum(s for s, _ in probes):.1f} s; slowest: {slowest}; {reports} report lines")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--at-once", type=int, default=2)
    parser.add_argument("--json", default=None, help="write every process's stamped lines here")
    args = parser.parse_args()
    executable = sanitizer.find()
    tools = ["memcheck", "initcheck"] if executable is not None else ["interpreter"]
    jobs = [(target, tool) for target in args.targets for tool in tools]
    began = time.monotonic()
    lock, runs = threading.Lock(), []

    def one(job):
        run = stamped(*job, executable)
        with lock:
            runs.append(run)
            print(summary(run), flush=True)

    with ThreadPoolExecutor(args.at_once) as pool:
        list(pool.map(one, jobs))
    print(f"{len(jobs)} processes, {args.at_once} at once: {time.monotonic() - began:.1f} s wall")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
