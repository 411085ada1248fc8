"""``lse-fuzz grade FILE_OR_DIR ... --op merge_state|combine``: a batch of an op's kernels.

Each candidate is fuzzed as ``lse-fuzz check --op`` fuzzes one (:mod:`fuzz.merge.child_run`: a
child process per candidate, ``--jobs`` at once, each killed after ``--worker-timeout``), and gets a
verdict: pass, fail (the check named), error, crash, timeout, load_error (it does not load, or
cannot be called as the op says), unsupported. The records go to ``OUT_DIR/grade-<op>.jsonl``, one
line per candidate, in the order given, rewritten after every candidate (:mod:`fuzz.merge.batch`):
``--resume`` continues a batch, and the command's supervisor continues it after a candidate
SIGKILLs the grader, which then convicts that candidate (``crash``) rather than running it a third time.

Signals a candidate sends the grader are ignored and blamed on it, and each file is graded as it
was when the batch started (a private copy), as the row LSE's ``grade`` does (:mod:`fuzz.merge.batch`).
What this does not do, where the row LSE's does (:mod:`fuzz.grading`): a signal no candidate can be
tied to (sent while several ran, by an orphan) is said on stderr, its senders not run again alone to
find the culprit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reference.errors import InvalidArgument

from .. import defaults, validate
from ..grading.blame import what_it_did
from ..grading.candidates import discover
from ..grading.snapshot import changed_note
from ..isolation import SignalGuard
from ..outcomes import ExitCode, Verdict, batch_exit_code
from .batch import OpBatch, options_key, report_path
from .command import refuse_row_options, run_options
from .ops import op

__all__ = ["GRADE_OPTIONS", "grade_op"]

GRADE_OPTIONS = ("budget", "seed", "device", "checks", "dtypes", "layouts", "profile", "shrink_seconds", "timeout", "jobs",
                 "out_dir", "quiet", "op", "lse_base", "resume", "overwrite")
"""The options of ``lse-fuzz grade`` an op's batch takes; the others are the row LSE's."""


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
    if args.resume and args.overwrite:
        raise InvalidArgument("--resume and --overwrite contradict each other: choose one.")
    if report_path(out, what.name).exists() and not (args.resume or args.overwrite):
        raise InvalidArgument(f"--out-dir={args.out_dir!r} already holds a report of --op {what.name}: pass --resume "
                              "to continue it, or --overwrite to start again.")
    guard = SignalGuard()  # a candidate's signals to this process are ignored and blamed; a stop of it undone
    batch = OpBatch(candidates, options, out=out, key=options_key(options, function=function, timeout=timeout),
                    timeout=timeout, jobs=jobs, resume=args.resume, guard=guard)
    print(f"lse-fuzz grade --op {what.name}: {len(candidates)} candidates on {options['device']} with {jobs} job(s) "
          f"(budget {options['budget']}, seed {options['seed']}, LSE base {options['lse_base']}) -> {out}",
          file=sys.stderr, flush=True)
    with guard:
        records = batch.records()
    stray = guard.claim(None)
    if stray:  # while several ran: a stop names no sender, an orphan's signal no candidate
        print(f"lse-fuzz: blamed on no candidate: something {what_it_did(stray)}", file=sys.stderr)
    if batch.kept:
        print(f"resumed: {len(batch.kept)} candidates kept from the earlier report", file=sys.stderr)
    if batch.submission.changed_while_graded:
        print(changed_note([c.name for c in batch.submission.changed_while_graded]), file=sys.stderr)
    for record in records:
        check = f": {record['check']}" if record["check"] else ""
        print(f"{record['verdict']:<12} {record['candidate']} ({record['seconds']:.1f} s){check}")
        if record["verdict"] != Verdict.PASS.value and not args.quiet:
            print("    " + "\n    ".join((record["report"] or "").splitlines()[:6]))
    return ExitCode(batch_exit_code(Verdict(record["verdict"]) for record in records))
