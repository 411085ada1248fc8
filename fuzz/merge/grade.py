"""``lse-fuzz grade FILE_OR_DIR ... --op merge_state|combine``: a batch of an op's kernels.

Each candidate is fuzzed as ``lse-fuzz check --op`` fuzzes one (:mod:`fuzz.merge.child_run`: a
child process per candidate, ``--jobs`` at once, each killed after ``--worker-timeout``), and gets a
verdict: pass, fail (the check named), error, crash, timeout, load_error (it does not load, or
cannot be called as the op says), unsupported. The records go to ``OUT_DIR/grade-<op>.jsonl``, one
line per candidate, in the order given.

What this does not do, where the row LSE's ``grade`` does (:mod:`fuzz.grading`): it is no defence
against candidates that attack the grader (signals to it, forks that outlive their run), it keeps no
resumable report, and the implementation runs in the process that judges it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reference.errors import InvalidArgument

from .. import defaults, validate
from ..grading.candidates import Candidate, discover
from ..isolation import start_watchdog
from ..outcomes import ExitCode, Verdict, batch_exit_code
from .child_run import ChildRun, run_in_child
from .command import refuse_row_options, run_options
from .ops import op

__all__ = ["GRADE_OPTIONS", "grade_op"]

GRADE_OPTIONS = ("budget", "seed", "device", "checks", "dtypes", "layouts", "profile", "shrink_seconds", "timeout", "jobs",
                 "out_dir", "quiet", "op", "lse_base")
"""The options of ``lse-fuzz grade`` an op's batch takes; the others are the row LSE's."""


def _graded(candidate: Candidate, options: dict, timeout: float) -> dict:
    started = time.perf_counter()
    try:
        ended = run_in_child({**options, "target": candidate.target}, timeout=timeout)
    except InvalidArgument as exc:  # this candidate cannot be used; the batch goes on
        ended = ChildRun(Verdict.LOAD_ERROR, f"{Verdict.LOAD_ERROR.label} {candidate.name}: {exc}",
                         seconds=time.perf_counter() - started)
    result = ended.result or {}
    return {"candidate": candidate.name, "target": candidate.target, "op": options["op"],
            "verdict": (ended.verdict or Verdict.INTERNAL_ERROR).value, "check": result.get("check"),
            "seconds": round(ended.seconds, 3), "reproducer": result.get("reproducer"),
            "report": ended.text or ended.internal, "result": ended.result}


def grade_op(args: argparse.Namespace) -> int:
    """The exit code of the batch (:func:`fuzz.outcomes.batch_exit_code`)."""
    what = op(args.op, flag="--op")
    refuse_row_options(args, what.name, "grade", GRADE_OPTIONS)
    out = Path(args.out_dir)
    options = run_options(args, what.name, reproducer_dir=str(out / "reproducers"))
    function = what.name if args.function == "lse" else args.function  # the default names the op's function
    candidates = discover(args.paths, function=function)
    timeout = validate.seconds(defaults.GRADE_TIMEOUT if args.timeout is None else args.timeout,
                               name="--worker-timeout")
    jobs = 1 if args.jobs is None else validate.integer(args.jobs, name="--jobs", low=1)
    print(f"lse-fuzz grade --op {what.name}: {len(candidates)} candidates on {options['device']} with {jobs} job(s) "
          f"(budget {options['budget']}, seed {options['seed']}, LSE base {options['lse_base']}) -> {out}",
          file=sys.stderr, flush=True)
    # A candidate that stops this process (SIGSTOP) would hold the batch for good: continued (not blamed).
    dog = start_watchdog()
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(candidates)))) as pool:
            records = list(pool.map(lambda c: _graded(c, options, timeout), candidates))
    finally:
        if dog is not None:
            dog.stop()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"grade-{what.name}.jsonl"
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text("".join(json.dumps(record, sort_keys=True) + "\n" for record in records))
    os.replace(tmp, path)
    for record in records:
        check = f": {record['check']}" if record["check"] else ""
        print(f"{record['verdict']:<12} {record['candidate']} ({record['seconds']:.1f} s){check}")
        if record["verdict"] != Verdict.PASS.value and not args.quiet:
            print("    " + "\n    ".join((record["report"] or "").splitlines()[:6]))
    return ExitCode(batch_exit_code(Verdict(record["verdict"]) for record in records))
