"""A long fuzz campaign: ``fuzz.check`` runs of one implementation spread over worker processes.

    python bench/fuzz_campaign.py [--impl reference:lse] [--examples 10000] [--workers N]
                                  [--chunk 250] [--seed 0] [--profile lse-thorough]
                                  [--contract strict] [--device auto] [--deadline S] [--out FILE]

One ``fuzz.check`` is single-threaded: Hypothesis, the input generation and the checks run in one
Python process, and on a GPU each new launch configuration of a Triton kernel is compiled on the
host first. A campaign of thousands of examples therefore splits into chunks, ``fuzz.check(impl,
budget=chunk, seed=seed + i)`` for chunk i, run by ``--workers`` processes at once (Triton's disk
cache lets a kernel compiled by one worker be reused by the others). Every chunk is a complete run
with its own seed, so the chunks draw different examples; a campaign's examples are the sum of the
chunks'. The first chunk that fails stops the campaign: its summary, the minimal counterexample and
the replay command are printed and saved.

``--deadline`` bounds the campaign's wall time: chunks not started by then are not run, and the
report says how many examples did run. Exit code 0 when every chunk that ran passed and the
examples asked for were all run, 1 on a failure, 3 when the deadline left examples unrun.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _run_chunk(impl_target: str, options: dict, threads: int) -> dict:
    """One ``fuzz.check`` in a worker process; returns its JSON-able result."""
    import torch

    import fuzz
    from fuzz.target import load_target

    # The workers share the cores: a full OpenMP pool in each spins against the others'.
    torch.set_num_threads(threads)

    impl = load_target(impl_target)
    result = fuzz.check(impl, target=impl_target, **options)
    record = result.to_dict()
    record["summary"] = result.summary()
    record["reproducer"] = str(result.reproducer) if result.reproducer else None
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference:lse", help="TARGET: path/to/file.py:func or module:func")
    parser.add_argument("--examples", type=int, default=10_000, help="examples in all (default 10000)")
    parser.add_argument("--chunk", type=int, default=250, help="examples per fuzz.check run (default 250)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                        help="runs at once (default: CPU count - 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of chunk 0; chunk i uses seed + i")
    parser.add_argument("--profile", default="lse-thorough")
    parser.add_argument("--contract", default="strict", choices=["strict", "finite"])
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--huge-offsets", action="store_true", help="also draw element offsets >= 2**31")
    parser.add_argument("--deadline", type=float, default=None, help="start no chunk after S seconds")
    parser.add_argument("--reproducer-dir", default=".lse-fuzz", help="where a failure's reproducer goes")
    parser.add_argument("--out", type=Path, help="also write the report (JSON) here")
    args = parser.parse_args(argv)
    for name in ("examples", "chunk", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)}; expected an integer >= 1")

    from bench._common import run_header
    from fuzz.validate import device as parse_device
    from reference.errors import InvalidArgument

    try:
        device = str(parse_device(args.device))
    except InvalidArgument as exc:
        parser.error(str(exc))
    sizes = [args.chunk] * (args.examples // args.chunk)
    if args.examples % args.chunk:
        sizes.append(args.examples % args.chunk)
    options = [dict(budget=size, seed=args.seed + i, profile=args.profile, contract=args.contract, device=device,
                    huge_offsets=args.huge_offsets, reproducer_dir=args.reproducer_dir)
               for i, size in enumerate(sizes)]
    header = (f"# {run_header(device)}\n"
              f"# fuzz campaign of {args.impl}: {args.examples} examples in {len(sizes)} chunks of "
              f"<= {args.chunk}, {args.workers} workers, profile {args.profile}, contract {args.contract}, "
              f"device {device}, seeds {args.seed}..{args.seed + len(sizes) - 1}"
              f"{', huge offsets' if args.huge_offsets else ''}")
    print(header, flush=True)

    threads = max(1, (os.cpu_count() or 1) // args.workers)
    start = time.perf_counter()
    records: list[dict] = []
    failure: dict | None = None
    unstarted = 0
    # spawn, not fork: a forked child of a process that touched CUDA cannot use CUDA.
    context = multiprocessing.get_context("spawn")
    with futures.ProcessPoolExecutor(max_workers=args.workers, mp_context=context) as pool:
        pending: dict[futures.Future, int] = {}
        queue = list(range(len(sizes)))

        def fill() -> None:
            nonlocal unstarted
            while queue and len(pending) < args.workers:
                if args.deadline is not None and time.perf_counter() - start > args.deadline:
                    unstarted += len(queue)
                    queue.clear()
                    return
                i = queue.pop(0)
                pending[pool.submit(_run_chunk, args.impl, options[i], threads)] = i

        fill()
        while pending:
            done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
            for future in done:
                i = pending.pop(future)
                record = future.result()
                record["chunk"] = i
                records.append(record)
                elapsed = time.perf_counter() - start
                total = sum(r["examples"] for r in records)
                print(f"chunk {i:3d} seed {options[i]['seed']}: {record['status']:6s} {record['examples']:5d} "
                      f"examples in {record['seconds']:6.1f} s ({record['examples_per_second']}/s); "
                      f"campaign {total} examples, {elapsed:.0f} s", flush=True)
                if record["status"] != "passed" and failure is None:
                    failure = record
                    queue.clear()
            if failure is None:
                fill()
    wall = time.perf_counter() - start

    total = sum(r["examples"] for r in records)
    passed = [r for r in records if r["status"] == "passed"]
    verdict = "FAILED" if failure else ("INCOMPLETE" if total < args.examples else "PASSED")
    print(f"{verdict}: {total} examples in {wall:.0f} s wall ({total / wall:.1f} examples/s), "
          f"{len(passed)} of {len(records)} chunks passed"
          + (f", {unstarted} chunks not started (deadline {args.deadline:.0f} s)" if unstarted else ""))
    if failure:
        print(failure["summary"])
    if args.out:
        report = {"header": header, "verdict": verdict, "examples": total, "wall_seconds": round(wall, 1),
                  "examples_per_second": round(total / wall, 2), "chunks": sorted(records, key=lambda r: r["chunk"])}
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    if failure:
        return 1
    return 3 if total < args.examples else 0


if __name__ == "__main__":
    raise SystemExit(main())
