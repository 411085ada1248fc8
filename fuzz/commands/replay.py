"""``lse-fuzz replay FILE --impl TARGET``: run a saved counterexample through the implementation again.

Every reproducer file (a failing check, an error, or the example a worker crashed or hung on) is
replayed the same way: the example is rebuilt exactly (values, strides, storage offset) and the
checks that ran on it run again. By default the replay runs in this process, so a debugger or
print statements in the implementation work as usual; ``--isolate`` runs the implementation in a
worker instead, for an example that crashed or hung it (the replay command printed for those
already says ``--isolate``).

Exit codes: 0 the example passes now, 1 it still fails (the same report as when it was found),
2 the file or the target cannot be used, 4 the CPU cannot run a construct it uses (replay it with
``--device cuda``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import defaults
from .check import add_call_options, call_options


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "replay",
        help="run a saved counterexample (a reproducer file) through an implementation again",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 passes now, 1 still fails, 2 the file or the target cannot be used, 4 unsupported on "
               "the CPU (it uses a construct the CPU cannot run: replay it with --device cuda)",
    )
    parser.add_argument("file", type=Path, help="reproducer file written when a check failed (.pt)")
    parser.add_argument("--impl", default="reference:lse", metavar="TARGET",
                        help="path/to/file.py[:func] or package.module[:func] (default reference:lse)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: where the example was found, if present)")
    parser.add_argument("--isolate", action="store_true",
                        help="run the implementation in a worker process (for an example that crashed or hung it)")
    parser.add_argument("--call-timeout", type=float, default=defaults.CALL_TIMEOUT, metavar="S",
                        help=f"with --isolate: seconds the call may take (default {defaults.CALL_TIMEOUT:g})")
    add_call_options(parser)  # as the replay line prints them: they must be the file's
    return parser


def _same_call(args: argparse.Namespace, saved_call) -> None:
    """The call convention options given must be the file's (the replay line prints them)."""
    from reference.errors import InvalidArgument

    from ..grading import GradeOptions

    given = call_options(args)
    if given and GradeOptions(**given).convention() != saved_call:
        found = saved_call.cli_args() or "no call convention options (the default lse(x))"
        raise InvalidArgument(f"{GradeOptions(**given).convention().cli_args() or 'the options given'}: the file "
                              f"was found with {found}; give those, or none.")


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `lse-fuzz --help` must not pay for torch and triton.
    from reference.errors import InvalidArgument

    from .. import validate
    from ..grading import GradeOptions, evaluate_replay, format_record
    from ..outcomes import CHECK_EXIT_CODES, Verdict, verdict_of
    from ..reproducer import load_reproducer
    from ..runner import replay
    from ..target import load_target, resolve_target

    if not args.file.is_file():
        raise InvalidArgument(f"file={str(args.file)!r} does not exist; pass the path printed after 'replay:'.")
    saved = load_reproducer(args.file)  # a bad file is one line, before anything is loaded
    _same_call(args, saved.contract.call)
    target = resolve_target(args.impl, name="--impl")
    if args.isolate:
        device = args.device or ("cuda" if saved.meta.get("device", "").startswith("cuda") else "cpu")
        call = saved.contract.call
        options = GradeOptions(device=str(validate.device(device, name="--device")),
                               call_timeout=validate.seconds(args.call_timeout, name="--call-timeout"),
                               ndim=call.ndim, dim=call.dim, keepdim=call.keepdim, call_args=call.args.value,
                               result=call.result)
        record = evaluate_replay(target, args.file, options)
        verdict = record.verdict
        if verdict is Verdict.LOAD_ERROR:
            raise InvalidArgument(record.reason)
        print(format_record(record))
        return CHECK_EXIT_CODES[verdict]
    result = replay(args.file, load_target(target, name="--impl"), device=args.device, target=target)
    print(result.summary())
    return CHECK_EXIT_CODES[verdict_of(status=result.status)]
