"""``lse-fuzz replay FILE --impl TARGET``: run a saved counterexample through the implementation again.

Every reproducer file (a failing check, an error, or the example a worker crashed or hung on) is
replayed the same way: the example is rebuilt exactly (values, strides, storage offset) and the
checks that ran on it run again. By default the replay runs in this process, so a debugger or
print statements in the implementation work as usual; ``--isolate`` runs the implementation in a
worker instead, for an example that crashed or hung it (the replay command printed for those
already says ``--isolate``). The report is headed by the verdict as ``lse-fuzz check`` spells it
(PASS, FAIL, ERROR, CRASH, TIMEOUT, UNSUPPORTED: :attr:`fuzz.outcomes.Verdict.label`).

Exit codes: 0 the example passes now, 1 it still fails (the same report as when it was found),
2 the file or the target cannot be used, 4 the CPU cannot run a construct it uses (replay it with
``--device cuda``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import option_table


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "replay",
        help="run a saved counterexample (a reproducer file) through an implementation again",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 passes now, 1 still fails, 2 the file or the target cannot be used, 4 unsupported on "
               "the CPU (it uses a construct the CPU cannot run: replay it with --device cuda)",
    )
    parser.add_argument("file", type=Path, help="reproducer file written when a check failed (.pt)")
    option_table.add_arguments(parser, "replay")  # the call convention as the replay line prints it: the file's
    return parser


def _same_call(args: argparse.Namespace, saved_call) -> None:
    """The call convention options given must be the file's (the replay line prints them)."""
    from reference.errors import InvalidArgument

    from ..grading import GradeOptions
    from ..grading.options import CALL_FIELDS

    given = {name: value for name, value in option_table.given(args, CALL_FIELDS).items() if value is not None}
    asked = GradeOptions.of(cli=True, **given).convention() if given else None
    if asked is not None and asked != saved_call:
        found = saved_call.cli_args() or "no call convention options (the default lse(x))"
        raise InvalidArgument(f"{asked.cli_args() or 'the options given'}: the file was found with {found}; give "
                              "those, or none.")


def _replay_op(args: argparse.Namespace) -> int:
    """An op's example, in this process (an op's reproducer is a failure, never a crash's input)."""
    from reference.errors import InvalidArgument

    from ..merge import replay_op
    from ..outcomes import CHECK_EXIT_CODES, verdict_of
    from ..target import load_target, resolve_target

    given = [flag for flag, value in (("--isolate", args.isolate), ("--ndim", args.ndim), ("--dim", args.dim),
                                      ("--keepdim", args.keepdim), ("--call-args", args.call_args),
                                      ("--result", args.result)) if value]
    if given:
        raise InvalidArgument(f"{', '.join(given)}: options of the row LSE's reproducers; this file is an op's "
                              "(it names the op and the LSE base): give FILE --impl TARGET [--device D].")
    target = resolve_target(args.impl, name="--impl")
    result = replay_op(args.file, load_target(target, name="--impl"), device=args.device, target=target)
    print(result.summary())
    return CHECK_EXIT_CODES[verdict_of(status=result.status)]


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `lse-fuzz --help` must not pay for torch and triton.
    from reference.errors import InvalidArgument

    from .. import validate
    from ..contract import Contract
    from ..grading import GradeOptions, evaluate_replay, format_record
    from ..outcomes import CHECK_EXIT_CODES, Verdict, verdict_of
    from ..reproducer import load_reproducer
    from ..runner import replay
    from ..target import load_target, resolve_target

    if not args.file.is_file():
        raise InvalidArgument(f"file={str(args.file)!r} does not exist; pass the path printed after 'replay:'.")
    from ..merge.reproducer import is_op_reproducer

    if is_op_reproducer(args.file):  # an op's (--op merge_state, combine): the file names the op
        return _replay_op(args)
    saved = load_reproducer(args.file)  # a bad file is one line, before anything is loaded
    _same_call(args, saved.contract.call)
    target = resolve_target(args.impl, name="--impl")
    if args.isolate:
        device = args.device or ("cuda" if saved.meta.get("device", "").startswith("cuda") else "cpu")
        options = GradeOptions(device=str(validate.device(device, name="--device")),
                               call_timeout=validate.seconds(args.call_timeout, name="--call-timeout"),
                               contract=Contract(call=saved.contract.call))
        record = evaluate_replay(target, args.file, options)
        verdict = record.verdict
        if verdict is Verdict.LOAD_ERROR:
            raise InvalidArgument(record.reason)
        print(format_record(record))
        return CHECK_EXIT_CODES[verdict]
    result = replay(args.file, load_target(target, name="--impl"), device=args.device, target=target)
    print(result.summary())  # headed by verdict_of(status=...).label, as the isolated replay's and check's reports
    return CHECK_EXIT_CODES[verdict_of(status=result.status)]
