"""``lse-fuzz check TARGET``: fuzz one implementation, with the implementation in an isolated worker.

Exit codes:
  0  every example passed every check
  1  a check failed, or the implementation raised, crashed, exited, hung or ran out of memory
  2  the target or the options cannot be used (missing file, syntax error, import error, no such
     function, wrong signature, bad option): one line on stderr
  3  the harness itself failed (e.g. a GPU that stayed too full): no verdict on the implementation
  4  unsupported: the implementation uses a construct the CPU's emulation of Triton cannot run as a
     GPU does (the report names it): no verdict on the CPU; run it with --device cuda
"""

from __future__ import annotations

import argparse

from .. import option_table

TAKES_SIGNALS = True
"""The command line holds the signals for it (fuzz.isolation.hold_signals) until its guard takes them."""

EPILOG = """\
TARGET is path/to/file.py[:func] or package.module[:func]; func defaults to lse and must take
the 2-D input tensor and return the (M,) result, unless the call convention options say how it
is called: e.g. --ndim 3 --dim 1 --call-args x,dim,keepdim --keepdim --result 1 for
func(x, dim=1, keepdim=True) returning (out, lse) with lse of shape (B, 1, C).

The implementation runs in a separate worker process (fuzz/isolation/): a segfault, a hang, an
exit or an out-of-memory there ends the run with a verdict instead of taking the fuzzer down.
The worker is not a security sandbox: it runs with your rights.

exit codes:
  0  passed
  1  a check failed, or the implementation raised, crashed, exited, hung or ran out of memory
  2  the target or the options cannot be used
  3  the harness itself failed (no verdict on the implementation)
  4  unsupported on the CPU: it uses a construct the CPU's emulation of Triton cannot run (named in
     the report); run with --device cuda for a verdict
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check",
        help="fuzz one implementation (isolated in a worker process)",
        description="Fuzz one row-wise LSE implementation against the float64 reference, with the "
                    "implementation running in an isolated worker process.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", metavar="TARGET", help="path/to/file.py[:func] or package.module[:func]")
    option_table.add_arguments(parser, "check")
    return parser


def uses_workers(args: argparse.Namespace) -> bool:
    """Whether this run starts isolated workers (the CLI then starts their fork server early): the
    row LSE's run does; an op's (--op merge_state, combine) runs in a child process of its own."""
    return getattr(args, "op", "lse") == "lse"


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from reference.errors import InvalidArgument

    from ..grading import GradeOptions, evaluate, format_record, render_markdown
    from ..grading.evaluate import blame_signals
    from ..grading.options import use_torch_threads
    from ..grading.reports import atomic_write
    from ..isolation import SignalGuard, own_stops
    from ..outcomes import CHECK_EXIT_CODES, Verdict
    from ..target import resolve_target

    target = resolve_target(args.target)
    if args.op != "lse":
        from ..merge.command import run_check

        return run_check(args, target)
    options = GradeOptions.from_args(args)
    use_torch_threads(options)
    for name in ("json", "markdown"):
        value = getattr(args, name)
        if value is not None and not Path(value).parent.is_dir():
            raise InvalidArgument(f"--{name}={value!r}: the directory {str(Path(value).parent)!r} does not exist.")
    what = f"budget {options.budget}, seed {options.seed}" + (" + private seed" if options.private_seed else "")
    what += "; forward and backward" if options.backward else ""

    def announce() -> None:  # only once the target loaded: a bad target gets one line, the error
        print(f"lse-fuzz check {target} on {options.device} ({what}; contract {options.declared().describe()})",
              file=sys.stderr, flush=True)

    # A signal from the candidate's processes is ignored and makes it crash; so does a stop of this process.
    with SignalGuard() as guard, own_stops(guard):
        record = evaluate(target, options, reproducer_dir=Path(args.reproducers), on_loaded=announce,
                          side_by_side=True)
        blame_signals(record, guard.claim())
    verdict = record.verdict
    if verdict is Verdict.LOAD_ERROR:
        raise InvalidArgument(record.reason)
    print(format_record(record))
    if args.json:
        atomic_write(Path(args.json), json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n")
    if args.markdown:
        atomic_write(Path(args.markdown), render_markdown([record], title="lse-fuzz check"))
    return CHECK_EXIT_CODES[verdict]



