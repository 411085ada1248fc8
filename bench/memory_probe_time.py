"""Where the memory phase's time goes: its probe process alone, each probe's seconds, with and without the tools.

    python bench/memory_probe_time.py TARGET [TARGET ...] [--modes plain-cold,plain-warm,tools-cold,tools-warm]
                                      [--huge] [--out PREFIX]

For each TARGET, the phase's probe process (``python -m fuzz.memory.probe TARGET``, the fixed probes
and no run inputs) in each mode, one after the other:

* ``plain-cold``: no tool, an empty Triton cache: the probes' compiles and calls.
* ``plain-warm``: no tool, on the cache the first run filled: the calls alone.
* ``tools-cold``: memcheck and initcheck at once, as the phase runs them, an empty cache.
* ``tools-warm``: the same on the filled cache: what the tools add beyond the compiles.

Each process's output is read line by line as it comes: its start-up (to the first probe's line),
each probe's seconds (its ``start`` line to its ``done`` line), the total. The caching allocator is
off in every mode, as in the phase. Without a GPU, ``plain-*`` runs the probes in Triton's
interpreter (``--interpreter``) and ``tools-*`` is left out. Prints a table per target and writes
``PREFIX.jsonl`` (one line per process) when ``--out`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz.memory.phase import PRINT_LIMIT  # noqa: E402 - after the path: the tree's own fuzzer

MODES = ("plain-cold", "plain-warm", "tools-cold", "tools-warm")


def timed_lines(command: list[str], env: dict[str, str], started: float, into: list[tuple[float, str]]) -> subprocess.Popen:
    """Start ``command``; a thread appends (seconds since ``started``, line) for each line it prints."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env=env, text=True, errors="replace")

    def read() -> None:
        for line in process.stdout:
            into.append((time.monotonic() - started, line.rstrip("\n")))

    threading.Thread(target=read, daemon=True).start()
    return process


def probe_times(lines: list[tuple[float, str]]) -> dict:
    """From one process's timed lines: start-up, each probe's seconds, and what it raised."""
    begun, probes, raised = {}, [], []
    first = next((t for t, line in lines if line.startswith("lse-fuzz-probe ") and " start " in line), None)
    for t, line in lines:
        words = line.split(" ", 3)
        if len(words) < 3 or words[0] != "lse-fuzz-probe" or not words[1].isdigit():
            continue
        if words[2] == "start":
            begun[words[1]] = (t, words[3] if len(words) > 3 else "")
        elif words[2] == "done" and words[1] in begun:
            probes.append({"probe": begun[words[1]][1], "seconds": round(t - begun[words[1]][0], 3)})
        elif words[2] == "raised":
            raised.append(line)
    return {"startup": None if first is None else round(first, 3), "probes": probes, "raised": raised,
            "total": round(lines[-1][0], 3) if lines else None}


def run_mode(target: str, mode: str, cache: str, *, cuda: bool, huge: bool, executable: str | None,
             timeout: float) -> list[dict]:
    """One mode's process(es) for ``target``: a record per process."""
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", PYTHONUNBUFFERED="1", TRITON_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    probe = [sys.executable, "-m", "fuzz.memory.probe", target, *(["--huge"] if huge else [])]
    if not cuda:
        env["TRITON_INTERPRET"] = "1"
        commands = {"plain": [*probe, "--interpreter"]}
    elif mode.startswith("plain"):
        commands = {"plain": [*probe, "--device", "cuda"]}
    else:
        commands = {tool: [executable, "--tool", tool, "--print-limit", str(PRINT_LIMIT[tool]), *probe, "--device", "cuda"]
                    for tool in ("memcheck", "initcheck")}
    started, running = time.monotonic(), {}
    for name, command in commands.items():
        lines: list[tuple[float, str]] = []
        running[name] = (timed_lines(command, env, started, lines), lines)
    records = []
    for name, (process, lines) in running.items():
        try:
            code = process.wait(timeout=max(1.0, timeout - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            process.kill()
            code = None
        process.wait()
        time.sleep(0.1)  # the reader's last lines
        records.append({"target": target, "mode": mode, "process": name, "exit": code,
                        "wall": round(time.monotonic() - started, 3), **probe_times(lines),
                        "tail": [line for _, line in lines[-3:]] if code != 0 else []})
    return records


def table(records: list[dict]) -> str:
    rows = ["| mode | process | exit | start-up s | probes | probes' s | slowest probes | wall s |",
            "|---|---|---|---|---|---|---|---|"]
    for r in records:
        slowest = sorted(r["probes"], key=lambda p: -p["seconds"])[:3]
        rows.append(f"| {r['mode']} | {r['process']} | {r['exit']} | {r['startup']} | {len(r['probes'])} | "
                    f"{sum(p['seconds'] for p in r['probes']):.1f} | "
                    + "; ".join(f"{p['probe']} {p['seconds']:.1f}" for p in slowest) + f" | {r['wall']:.1f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--huge", action="store_true", help="add the views past 2**31 elements (as the phase does when the run draws huge offsets)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one mode may take")
    parser.add_argument("--out", default=None, help="PREFIX of the .jsonl written")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"--modes: unknown {', '.join(unknown)}; choose from {', '.join(MODES)}")
    import torch  # noqa: PLC0415

    from fuzz.memory import sanitizer  # noqa: PLC0415

    cuda = torch.cuda.is_available()
    executable = sanitizer.find() if cuda else None
    everything = []
    for target in args.targets:
        cache, records = tempfile.mkdtemp(prefix="lse-probe-cache-"), []
        for mode in modes:
            if mode.startswith("tools") and executable is None:
                print(f"{target}: {mode} left out (no GPU or no compute-sanitizer)")
                continue
            if mode.endswith("cold"):
                cache = tempfile.mkdtemp(prefix="lse-probe-cache-")
            records += run_mode(target, mode, cache, cuda=cuda, huge=args.huge, executable=executable,
                                timeout=args.timeout)
        print(f"\n## {target}\n\n{table(records)}")
        everything += records
    if args.out:
        Path(args.out + ".jsonl").write_text("".join(json.dumps(r) + "\n" for r in everything))
    return 0


if __name__ == "__main__":
    sys.exit(main())
