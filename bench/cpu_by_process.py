"""Where a command's CPU time goes, by kind of process, and how busy the machine's CPUs were.

    python bench/cpu_by_process.py [--every 0.1] [--json FILE] -- COMMAND ...

Runs COMMAND and, every ``--every`` seconds until it exits, reads ``/proc``: each descendant's CPU
seconds (user + system) and the machine's busy CPUs. Prints the CPU seconds of each kind of
process (:func:`kind`: the command itself, the fork server's children (grading drivers and
workers), compute-sanitizer and the probes it runs, ptxas, other), the exact total (the reaped
descendants' rusage; the kinds are sampled, so a process's last ``--every`` seconds are not in
them), and, per second of the run, how many CPUs the machine kept busy. A cold GPU mutation
analysis on 16 CPUs, for instance: is it CPU-bound, and which processes take the CPUs?
Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict

TICK = os.sysconf("SC_CLK_TCK")


def kind(comm: str, cmdline: str, parent_kind: str, is_root: bool) -> str:
    """The kind of one process, from its command name, command line and its parent's kind. A worker
    overwrites its command line (:mod:`fuzz.isolation.guard.secret`): a child of the fork server
    whose command line is not the fork server's is a worker."""
    if is_root:
        return "the command"
    program = cmdline.split(" ")[0]
    if comm == "ptxas" or program.endswith("ptxas"):
        return "ptxas"
    if "compute-sanitizer" in comm or program.endswith("compute-sanitizer"):
        return "compute-sanitizer"
    if "fuzz.memory.probe" in cmdline:
        return "memory probes (under compute-sanitizer)"
    if parent_kind == FORK_SERVER:
        return DRIVERS if "zygote_main" in cmdline else WORKERS
    if "zygote_main" in cmdline:
        return FORK_SERVER
    if parent_kind in (DRIVERS, WORKERS):
        return f"{parent_kind}: their children ({comm})"
    return f"other ({cmdline[:70] or comm})"


FORK_SERVER = "the fork server"
DRIVERS = "drivers (grading, forked from the fork server)"
WORKERS = "workers (the implementations, forked from the fork server)"


def _stat(pid: int) -> tuple[int, float, str] | None:
    """(parent pid, CPU seconds, command name) of a live process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, comm


def _depth(pid: int, stats: dict) -> int:
    depth = 0
    while pid in stats and depth < 64:
        pid, depth = stats[pid][0], depth + 1
    return depth


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _busy() -> tuple[float, float]:
    """(busy, all) CPU seconds of the machine so far."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / TICK, sum(values) / TICK


def sample(command: list[str], every: float) -> dict:
    started = time.monotonic()
    process = subprocess.Popen(command)
    root = process.pid
    seen: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU seconds at its last sample)
    known_kind: dict[int, str] = {}
    per_second: dict[int, float] = {}
    last_busy, last_all = _busy()
    while process.poll() is None:
        time.sleep(every)
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                found = _stat(int(name))
                if found is not None:
                    stats[int(name)] = found
        ours = {root}
        grew = True
        while grew:  # descendants of the command (a child's parent is known before it)
            grew = False
            for pid, (parent, _, _) in stats.items():
                if parent in ours and pid not in ours:
                    ours.add(pid)
                    grew = True
        for pid in sorted(ours, key=lambda p: _depth(p, stats)):
            if pid not in stats:
                continue
            parent, cpu, comm = stats[pid]
            # A worker overwrites its command line once it starts: a driver's kind is read again.
            if pid not in known_kind or known_kind[pid] == DRIVERS:
                known_kind[pid] = kind(comm, _cmdline(pid), known_kind.get(parent, ""), pid == root)
            seen[pid] = (known_kind[pid], cpu)
        busy, total = _busy()
        now = time.monotonic()
        if total > last_all:
            cpus = os.cpu_count() or 1
            per_second[int(now - started)] = max(per_second.get(int(now - started), 0.0),
                                                 cpus * (busy - last_busy) / (total - last_all))
        last_busy, last_all = busy, total
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_kind: dict[str, float] = defaultdict(float)
    for what, cpu in seen.values():
        by_kind[what] += cpu
    return {"command": command, "exit": process.returncode, "wall": round(wall, 2),
            "cpus": os.cpu_count(), "total_cpu": round(usage.ru_utime + usage.ru_stime, 2),
            "by_kind": {k: round(v, 2) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
            "processes": len(seen),
            "busy_cpus_per_second": {str(k): round(v, 1) for k, v in sorted(per_second.items())}}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print("usage: python bench/cpu_by_process.py [--every S] [--json FILE] -- COMMAND ...", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=0.1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv[:split])
    if not argv[split + 1:]:
        parser.error("give the command after --")
    found = sample(argv[split + 1:], args.every)
    print(f"\ncpu_by_process: wall {found['wall']} s, exit {found['exit']}, {found['cpus']} CPUs, "
          f"descendants' CPU {found['total_cpu']} s ({found['processes']} processes sampled)")
    for what, cpu in found["by_kind"].items():
        print(f"  {cpu:8.1f} s  {what}")
    line = " ".join(f"{s}:{v:g}" for s, v in found["busy_cpus_per_second"].items())
    print(f"  busy CPUs per second of the run: {line}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
