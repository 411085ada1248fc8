"""``lse-fuzz grade FILE_OR_DIR ...``: grade a batch of implementations, each in its own worker.

Exit codes:
  0    every candidate passed
  1    at least one candidate did not pass (see the report), unsupported ones aside
  2    the paths or the options cannot be used (a bad candidate is a load_error verdict instead)
  4    every candidate passed but some were unsupported: they use a construct the CPU's emulation of
       Triton cannot run (the reason names it); grade those with --device cuda
  130  interrupted: the report holds the candidates finished so far; continue with --resume
  137  the grading process was killed (SIGKILL) three times in a row with no new record (the
       machine's out-of-memory killer?): the report holds the finished ones; continue with --resume
"""

from __future__ import annotations

import argparse

from .. import option_table

REPORT = "grade.jsonl"
"""The report's file (fuzz.grading.reports.REPORT_JSONL, whose module imports torch)."""

TAKES_SIGNALS = True
"""The command line holds the signals for it (fuzz.isolation.hold_signals) until its guard takes them."""

EPILOG = """\
Each candidate file must define the function (--function, default lse) taking the 2-D input
tensor and returning the (M,) result. Verdicts: pass, fail (with the failing check), error (it
raised), crash (its worker died), timeout, load_error, unsupported (on the CPU: it uses a construct
the CPU's emulation of Triton cannot run as a GPU does, which the reason names; neither a pass nor
a failure: grade it with --device cuda). Static findings about the source
(no Triton kernel, a call to torch.logsumexp, file or network access, ...) are reported as flags.
On CUDA, candidates that pass are timed on a fixed shape (--bench-shape): achieved GB/s and speed
against reference.lse and torch.logsumexp.

Reports in --out-dir: grade.jsonl (one record per candidate), grade.csv, reproducers/. They are
rewritten atomically after every candidate; Ctrl-C leaves a valid report, --resume continues it
(candidates already graded with the same options and an unchanged file are skipped). A grading
process killed by a candidate (SIGKILL) is replaced by one that continues the batch as --resume would.

exit codes:
  0    every candidate passed
  1    at least one candidate did not pass (unsupported ones aside)
  2    the paths or the options cannot be used
  4    the others passed, but some were unsupported on the CPU (run those with --device cuda)
  130  interrupted (the report holds the finished candidates)
  137  the grading process was killed three times in a row with no new record (--resume continues)
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "grade",
        help="grade a batch of implementations (parallel, isolated, resumable)",
        description="Grade many row-wise LSE implementations: a verdict, a counterexample, static "
                    "findings and (on CUDA) bandwidth for each.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", metavar="FILE_OR_DIR", nargs="+",
                        help="candidate files (file.py or file.py:func) or directories holding *.py candidates")
    parser.add_argument("--function", default="lse", metavar="NAME",
                        help="the function each candidate file defines (default lse; with --op, the op's name)")
    option_table.add_arguments(parser, "grade")
    return parser


def uses_workers(args: argparse.Namespace) -> bool:
    """Whether this run starts isolated workers (the CLI then starts their fork server early); an op's
    batch (--op merge_state, combine) runs a child process per candidate instead."""
    return args.executor == "local" and getattr(args, "op", "lse") == "lse"


def supervise(args: argparse.Namespace):
    """The command's first step: for a batch graded on this machine (the row LSE's or an op's),
    this process supervises a grading process, and another after each of its deaths by SIGKILL,
    which a candidate can send (fuzz.isolation.guard.supervisor). Its ``code`` is the exit code in
    the supervisor, None in the grading process, which goes on (with --resume when it continues
    the batch after a death)."""
    from pathlib import Path

    from ..isolation import Supervision, supervise as supervise_grading

    if args.executor != "local":
        return Supervision(None)
    op = getattr(args, "op", "lse")  # an op's batch has a report of its own (fuzz.merge.batch.report_path)
    report = Path(args.out_dir) / (REPORT if op == "lse" else f"grade-{op}.jsonl")

    def records() -> int:
        try:
            with open(report, "rb") as lines:
                return sum(1 for line in lines if line.strip())
        except OSError:
            return 0

    supervision = supervise_grading(records)
    if supervision.again:
        args.resume, args.overwrite = True, False
    return supervision


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from reference.errors import InvalidArgument

    from .. import validate
    from ..grading import GradeOptions, discover, grade, render_markdown, render_table
    from ..grading.reports import REPORT_JSONL, atomic_write
    from ..grading.snapshot import changed_note
    from ..isolation import describe_stops, release_signals
    from ..outcomes import ExitCode, batch_exit_code

    if args.op != "lse":
        from ..merge.grade import grade_op

        return grade_op(args)  # with a guard of its own (fuzz.merge.grade)
    if args.executor == "ray":
        release_signals()  # no guard there: the signals go to Python's handlers, as before
    if args.jobs is not None:
        validate.integer(args.jobs, name="--jobs", low=1)
    if args.ray_address is not None and args.executor != "ray":
        raise InvalidArgument(f"--ray-address={args.ray_address!r} is for --executor ray: add it, or drop the address.")
    if not args.function.isidentifier():
        raise InvalidArgument(f"--function={args.function!r} is not a function name.")
    if args.resume and args.overwrite:
        raise InvalidArgument("--resume and --overwrite contradict each other: choose one.")
    jobs = args.jobs if args.jobs is not None or args.executor == "ray" else 1
    options = GradeOptions.from_args(args, bench=not args.no_bench, jobs=jobs or 1)
    candidates = discover(args.paths, function=args.function)
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidArgument(f"--out-dir={args.out_dir!r} is a file, not a directory.")
    if (out / REPORT_JSONL).exists() and not (args.resume or args.overwrite):
        raise InvalidArgument(f"--out-dir={args.out_dir!r} already holds a report: pass --resume to continue it, "
                              "or --overwrite to start again.")
    if args.markdown is not None and not Path(args.markdown).parent.is_dir():
        raise InvalidArgument(f"--markdown={args.markdown!r}: the directory {str(Path(args.markdown).parent)!r} "
                              "does not exist.")

    shown: set[str] = set()

    def progress(record, done: int, total: int) -> None:  # record: a fuzz.grading.record.GradeRecord
        # A candidate shown twice was a suspect graded again (grading.local_executor): that record counts.
        again = ", graded again" if record.candidate in shown else ""
        shown.add(record.candidate)
        if not args.quiet:
            print(f"[{done}/{total}] {record.verdict.value:<10} {record.candidate} ({record.seconds:.1f} s{again})"
                  + (f": {record.check}" if record.check else ""), file=sys.stderr, flush=True)

    what = f"budget {options.budget}, seed {options.seed}" + (" + private seed" if options.private_seed else "")
    how = f"{jobs} job(s)" if args.executor == "local" else \
        f"a Ray cluster ({'every task at once' if jobs is None else f'at most {jobs} tasks at once'})"
    print(f"lse-fuzz grade: {len(candidates)} candidates on {options.device} with {how} "
          f"({what}; contract {options.declared().describe()}) -> {out}", file=sys.stderr, flush=True)
    result = grade(candidates, options, out=out, jobs=jobs, resume=args.resume, progress=progress,
                   executor=args.executor, ray_address=args.ray_address)
    for event in result.stray_signals:
        if event.stopped is not None:  # a stop names no sender: only the time could have told
            print(f"lse-fuzz: a process of this run {describe_stops([event])}; no candidate could be tied to it",
                  file=sys.stderr)
            continue
        print(f"lse-fuzz: ignored {event.name} from pid {event.pid}, a process of this run that no candidate "
              "could be tied to", file=sys.stderr)
    if result.resumed:
        print(f"resumed: {result.resumed} candidates kept from the earlier report", file=sys.stderr)
    if result.changed_while_graded:
        print(changed_note(result.changed_while_graded), file=sys.stderr)
    render_table(result.records)
    if args.markdown:
        atomic_write(Path(args.markdown), render_markdown(result.records, title="lse-fuzz grade"))
    if result.interrupted:
        print(f"lse-fuzz: interrupted after {len(result.records)} of {len(candidates)} candidates; the report in "
              f"{out} holds the finished ones: continue with --resume", file=sys.stderr)
        return ExitCode.INTERRUPTED
    return batch_exit_code(record.verdict for record in result.records)
