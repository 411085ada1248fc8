"""Where the time of one mutation analysis goes: when each job ended, and each part's seconds.

    python bench/mutants_timeline.py [--device cuda] [-j 14] [--parts N] [--gate-shares N] [MUTANT ...]

Runs :func:`fuzz.mutation.run_mutation` on the bundled catalog once (its workers' fork server started
first, as the CLI starts it) and prints when each job reached a driver and when it ended (which of
the gate's shares is the tail), and, in the order they ended, every gate job and mutant with the
second it ended (from the start of this script, imports included) and the seconds of each of its
parts, then the report's summary, the costs of each of the gate's jobs, and each mutant's status,
the check that killed it, and its costs. With
``LSE_FUZZ_VARIANTS`` set to a file, the launch variants of the whole run are summed per kernel at
the end: the binaries a cold run compiles (see :mod:`fuzz.interpreter.specialization`).
``--gate-shares`` splits the gate's run of the unmutated kernel into that many jobs instead of
:func:`fuzz.mutation.runner.gate_shares`'s count: an experiment on where a cold GPU run's tail goes.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402 - the clock starts before the imports, which are part of a run's cost
import os  # noqa: E402
import sys  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.isolation import expected_worker_environment, prestart  # noqa: E402 - light: no torch

prestart(expected_worker_environment())  # as `lse-fuzz mutants` does, before torch is imported here


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("-j", "--jobs", type=int, default=None)
    parser.add_argument("--parts", type=int, default=None, help="the examples' parts (default: the analysis's)")
    parser.add_argument("--gate-shares", type=int, default=None, help="the gate's shares (default: the analysis's)")
    parser.add_argument("--out-dir", default=None, help="keep the reports here")
    args = parser.parse_args(argv)
    if args.gate_shares is not None and args.gate_shares < 1:
        parser.error(f"--gate-shares {args.gate_shares}: give 1 or more")

    from fuzz.isolation import Timeline
    from fuzz.mutation import mutation_options, run_mutation
    from fuzz.interpreter.specialization import ENV, read_records

    started = Timeline.started

    def starting(self, key: str, at: float) -> None:  # when each job reaches a driver
        print(f"{time.perf_counter() - STARTED:7.1f} s  start {key}", flush=True)
        started(self, key, at)

    Timeline.started = starting
    ended_at = Timeline.ended

    def ending(self, key: str, at: float) -> None:  # when each job's driver gave its result back
        print(f"{time.perf_counter() - STARTED:7.1f} s  end {key}", flush=True)
        ended_at(self, key, at)

    Timeline.ended = ending
    from fuzz.isolation.pool import pool as pool_module

    zygote_for = pool_module.zygote_for

    def ready_zygote(*args, **kwargs):  # when the fork server answered (its preloads done): drivers start after
        zygote = zygote_for(*args, **kwargs)
        print(f"{time.perf_counter() - STARTED:7.1f} s  fork server ready", flush=True)
        return zygote

    pool_module.zygote_for = ready_zygote
    from fuzz.mutation import runner

    if args.gate_shares is not None:
        runner.gate_shares = lambda options: args.gate_shares
    shares: dict = {}  # each gate job's record: the report keeps one merged record of the shares
    take = runner.Gate.take

    def taking(self, result) -> None:
        take(self, result)
        if not isinstance(self.records[result.job.key], dict):  # the user's tests' record is a dict
            shares[result.job.key] = self.records[result.job.key]

    runner.Gate.take = taking

    imported = time.perf_counter() - STARTED
    print(f"imports done at {imported:.1f} s", flush=True)
    ended: list[tuple[str, float]] = []
    done = Counter()

    def progress(stage: str, count: int, total: int) -> None:
        if count > done[stage]:
            done[stage] = count
            ended.append((f"{stage} {count}/{total}", time.perf_counter() - STARTED))
            print(f"{ended[-1][1]:7.1f} s  {ended[-1][0]}", flush=True)

    report = run_mutation(source="catalog", mutants=args.mutants or None, jobs=args.jobs,
                          options=mutation_options(device=args.device, parts=args.parts), out_dir=args.out_dir, cache=None, progress=progress)
    print(f"\n{report.summary()}; setup {report.setup_seconds:.1f} s, gate {report.gate_seconds:.1f} s, "
          f"mutants after the gate {report.mutation_seconds:.1f} s; wall {time.perf_counter() - STARTED:.1f} s")
    for entry in report.gate:
        parts = entry.cell.record.parts or []
        memory = entry.cell.record.memory  # the first share's, which probes memory
        print(f"gate {entry.label}: {entry.cell.examples} examples, parts "
              + ", ".join(f"{p.get('examples')} ex {p.get('seconds', 0):.1f} s" for p in parts)
              + (f"; memory phase {memory['seconds']:.1f} s, waited {memory['waited']:.1f} s" if memory else "")
              + _split(entry.cell.record.costs))
    for key, record in sorted(shares.items()):
        print(f"  {key}: {record.examples} examples, {record.seconds or 0:.1f} s" + _split(record.costs))
    for result in report.results:
        parts = result.cell.record.parts or []
        memory = result.cell.record.memory  # the GPU's memory phase: its own seconds, and the verdict's wait
        by = f"by {result.cell.check}" if result.cell.check else ""
        print(f"{result.name:26s} {result.status.value:9s} {by:22s} {result.cell.examples:4d} ex "
              f"{result.cell.wall_seconds:6.1f} s; parts "
              + ", ".join(f"{p.get('seconds', 0):.1f}" for p in parts)
              + (f"; memory phase {memory['seconds']:.1f} s, waited {memory['waited']:.1f} s" if memory else "")
              + _split(result.cell.record.costs))
    path = os.environ.get(ENV)
    if path:
        kernels = Counter()
        for record in {(r["kernel"], str(r.get("key"))): r for r in read_records(path)}.values():
            kernels[record["kernel"].partition("@")[0]] += 1
        print(f"\nvariants in all: {sum(kernels.values())}")
        for kernel, count in kernels.most_common():
            print(f"  {count:4d} {kernel}")
    return report.exit_code


def _split(costs: dict | None) -> str:
    """Where a job's seconds went (its report's costs): worker start, compiling, calls, shrinking, ..."""
    if not costs:
        return ""
    seconds = {k: v for k, v in (costs.get("seconds") or {}).items() if v >= 0.05}
    return ("; " + " ".join(f"{k} {v:.1f}" for k, v in seconds.items())
            + f"; {costs.get('compiles', 0)} compiles, {costs.get('specializations', 0)} specializations")


if __name__ == "__main__":
    raise SystemExit(main())
