"""A fuzz campaign: implementations x seeds, each run graded as ``lse-fuzz check`` grades it.

    python bench/campaign.py TARGET_OR_DIR ... [--seeds 20] [--first-seed 0] [--budget 200]
                             [--workers N] [--device auto] [--profile P] [--stop-on-failure]
                             [--deadline S] [--out FILE] [--resume] [-- more check options]

Every (implementation, seed) pair is one job of the worker pool (``fuzz.isolation.Pool``): the
implementation runs in an isolated worker, the fuzzer in a driver, with the default options of
``lse-fuzz check`` unless more are given after ``--`` (a declared contract, ``--max-elements``,
...). The campaign's examples are the sum of its runs'. Two uses:

* the false-alarm campaign: every correct implementation of a corpus (e.g.
  ``tests/implementations/correct``) under many seeds must pass, so any failure it prints is a
  false alarm of the fuzzer, with its counterexample and replay command;
* a long campaign of one implementation (``reference:lse --seeds 40 --budget 250``).

An implementation that supports less than the full contract says so in a ``contracts.json``
beside it: ``{"file.py": {"max_n": 65519, "why": "..."}}`` (any of ``contract``, ``dtypes``,
``layouts``, ``output_dtype``, ``max_n``, ``backward``, ``lse_base``, as ``lse_fuzz.check`` takes them, and the call convention's
``ndim``, ``dim``, ``keepdim``, ``call_args``, ``result``, as ``lse-fuzz check`` takes them); its runs check that
declared contract, and the summary prints it.

Results go to ``--out`` (JSON lines, one per run, appended as they finish); ``--resume`` skips
the runs already there, so a campaign can be spread over several sessions (``--deadline S`` starts
no run after S seconds). Exit code 0 when every run passed and all ran, 1 on a failure, 3 when the
deadline left runs unrun.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _candidates(paths: list[str]):
    from fuzz.grading import Candidate, discover
    from fuzz.target import parse_target, resolve_target

    found = []
    for given in paths:
        if Path(given.rpartition(":")[0] or given).exists() or Path(given).exists():
            found += discover([given])
        else:
            parse_target(given, name="TARGET")
            found.append(Candidate.of_target(resolve_target(given, name="TARGET"), name=given))
    return found


CALL = ("ndim", "dim", "keepdim", "call_args", "result")  # the call convention (fuzz.calls), as GradeOptions names it
DECLARABLE = ("contract", "dtypes", "layouts", "output_dtype", "max_n", "backward", "lse_base", *CALL)


def check_keywords(declared: dict) -> dict:
    """``declared`` as ``lse_fuzz.check`` keywords: the call convention's fields as one ``call``."""
    keywords = {name: value for name, value in declared.items() if name not in CALL}
    call = {("args" if name == "call_args" else name): declared[name] for name in CALL if name in declared}
    if call:
        keywords["call"] = call
    return keywords


def declared_contract(path: Path | None) -> dict:
    """What ``contracts.json`` beside ``path`` declares for it (``lse_fuzz.check`` keywords), else {}."""
    if path is None:
        return {}
    table = Path(path).parent / "contracts.json"
    if not table.is_file():
        return {}
    entry = json.loads(table.read_text()).get(Path(path).name, {})
    unknown = set(entry) - set(DECLARABLE) - {"why"}
    if unknown:
        raise ValueError(f"{table}: {Path(path).name} declares {sorted(unknown)}; expected keys among {DECLARABLE}")
    return {key: value for key, value in entry.items() if key in DECLARABLE}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", metavar="TARGET_OR_DIR",
                        help="implementations: file.py[:func], a directory of them, or module:func")
    parser.add_argument("--seeds", type=int, default=20, help="seeds per implementation (default 20)")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds run from here (default 0)")
    parser.add_argument("--budget", type=int, default=None, help="examples per run (default: lse-fuzz check's)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1),
                        help="runs at once (default: CPU count - 1)")
    parser.add_argument("--stop-on-failure", action="store_true", help="start no run after the first failure")
    parser.add_argument("--deadline", type=float, default=None, help="start no run after S seconds")
    parser.add_argument("--out", type=Path, default=Path("campaign.jsonl"), help="results, one JSON line per run")
    parser.add_argument("--resume", action="store_true", help="skip the runs already in --out")
    args, check_argv = parser.parse_known_args(argv)
    check_argv = [a for a in check_argv if a != "--"]

    from bench._common import run_header
    from fuzz.cli import build_parser
    from fuzz.grading import GradeOptions
    from fuzz.isolation import Job, Pool, spread_over
    from fuzz.outcomes import Outcome
    from reference.errors import InvalidArgument

    try:
        candidates = _candidates(args.targets)
        placeholder = str(candidates[0].path or Path(__file__))
        check_args = build_parser().parse_args(["check", placeholder, *check_argv])
        options = GradeOptions.from_args(check_args, bench=False)
        if args.budget is not None:
            options = replace(options, budget=args.budget).validated(cli=True)
        options = replace(options, jobs=args.workers)
    except InvalidArgument as exc:
        parser.error(str(exc))
    for name in ("seeds", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)}; expected an int >= 1")

    done: dict[tuple[str, int], dict] = {}
    if args.resume and args.out.exists():
        for line in args.out.read_text().splitlines():
            record = json.loads(line)
            done[(_same_file(record["target"]), record["seed"])] = record
    elif args.out.exists():
        args.out.unlink()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    declared = {}
    try:
        for c in candidates:
            declared[c.target] = options.updated(**declared_contract(c.path)).validated(cli=True)
    except (InvalidArgument, ValueError) as exc:
        parser.error(str(exc))
    jobs = [Job(f"{c.target}|{seed}", "fuzz.grading.evaluate:grade_job",
                {"candidate": asdict(c), "options": replace(declared[c.target], seed=seed).to_wire(),
                 "reproducer_dir": str((args.out.parent / "reproducers").resolve()), "lock_dir": None,
                 "baselines": None})
            for seed in seeds for c in candidates if (_same_file(c.target), seed) not in done]

    header = (f"# {run_header(options.device)}\n# campaign: {len(candidates)} implementations x seeds "
              f"{seeds.start}..{seeds.stop - 1}, budget {options.budget}, profile {options.profile or 'lse-ci'}, "
              f"{args.workers} workers; contract {options.declared().describe()}; "
              f"{len(done)} runs resumed, {len(jobs)} to run")
    print(header, flush=True)
    for c in candidates:
        if declared[c.target].declared() != options.declared():
            print(f"# {c.name} declares (contracts.json): {declared[c.target].declared().describe()}", flush=True)

    started = time.perf_counter()
    records = dict(done)
    unstarted = 0
    failed = False
    with Pool(args.workers, timeout=(options.timeout or 900.0) + 300.0, gpus=spread_over(options.device)) as pool, \
            open(args.out, "a") as out:
        queue = list(jobs)

        def more():
            nonlocal unstarted
            while queue:
                if (args.deadline is not None and time.perf_counter() - started > args.deadline) or \
                        (failed and args.stop_on_failure):
                    unstarted += len(queue)
                    queue.clear()
                    return
                yield queue.pop(0)

        for result in pool.run(more()):
            target, seed = result.job.key.rsplit("|", 1)
            record = result.record if result.outcome is Outcome.RETURNED else {
                "verdict": "internal_error", "reason": result.detail, "target": target}
            record = {"target": target, "seed": int(seed), "verdict": record["verdict"],
                      "check": record.get("check"), "examples": record.get("examples") or 0,
                      "seconds": round(result.seconds, 2), "reason": record.get("reason", ""),
                      "details": record.get("details") if record["verdict"] != "pass" else None,
                      "replay": record.get("replay"), "slow": record.get("slow") or [],
                      **({"memory": record["memory"]} if record.get("memory") else {})}  # the GPU's memory phase
            records[(_same_file(target), int(seed))] = record
            out.write(json.dumps(record) + "\n")
            out.flush()
            failed = failed or record["verdict"] != "pass"
            print(f"{record['verdict']:<8} seed {seed:>3} {record['examples']:>5} examples {record['seconds']:7.1f} s "
                  f"{target}" + (f": {record['reason'].splitlines()[0]}" if record["verdict"] != "pass" else ""),
                  flush=True)
    wall = time.perf_counter() - started
    return _summary(records, candidates, wall, unstarted)


def _same_file(target: str) -> str:
    """``target`` with its file as an absolute path: a run recorded as ``tests/x.py:lse`` (run from
    the repository's root) is the run of ``/path/to/repo/tests/x.py:lse``, so --resume skips it."""
    location, _, function = target.rpartition(":")
    return f"{Path(location).resolve()}:{function}" if location.endswith(".py") else target


def _summary(records: dict, candidates: list, wall: float, unstarted: int) -> int:
    by_target = collections.defaultdict(list)
    for (target, _), record in records.items():
        by_target[target].append(record)
    print(f"\n{'implementation':<60} {'runs':>5} {'examples':>9} {'pass':>5}  verdicts")
    for candidate in candidates:
        runs = by_target.get(_same_file(candidate.target), [])
        verdicts = collections.Counter(r["verdict"] for r in runs)
        print(f"{candidate.name[-60:]:<60} {len(runs):>5} {sum(r['examples'] for r in runs):>9} "
              f"{verdicts.get('pass', 0):>5}  " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))
    failures = [r for r in records.values() if r["verdict"] != "pass"]
    total = sum(r["examples"] for r in records.values())
    verdict = "FAILED" if failures else ("INCOMPLETE" if unstarted else "PASSED")
    print(f"{verdict}: {len(records)} runs, {total} examples, {len(failures)} not passed, in {wall:.0f} s of wall time"
          + (f"; {unstarted} runs not started" if unstarted else ""))
    for record in failures[:5]:
        print(f"\n{record['target']} seed {record['seed']}: {record['verdict']}\n{record['details'] or record['reason']}")
    if failures:
        return 1
    return 3 if unstarted else 0


if __name__ == "__main__":
    raise SystemExit(main())
