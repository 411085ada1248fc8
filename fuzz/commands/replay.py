"""``lse-fuzz replay FILE --impl TARGET``: run a saved counterexample through the implementation again.

The replay runs in this process (no worker), so a debugger or print statements in the
implementation work as usual. Exit codes: 0 the example passes now, 1 it still fails (the same
report as when it was found), 2 the file or the target cannot be used.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "replay",
        help="run a saved counterexample (a reproducer file) through an implementation again",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 passes now, 1 still fails, 2 the file or the target cannot be used",
    )
    parser.add_argument("file", type=Path, help="reproducer file written when a check failed (.pt)")
    parser.add_argument("--impl", default="reference:lse", metavar="TARGET",
                        help="path/to/file.py[:func] or package.module[:func] (default reference:lse)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: where the example was found, if present)")
    return parser


def run(args: argparse.Namespace) -> int:
    from reference.errors import InvalidArgument

    if not args.file.is_file():
        raise InvalidArgument(f"file={str(args.file)!r} does not exist; pass the path printed after 'replay:'.")
    import fuzz
    from fuzz.isolation import resolve_target

    target = resolve_target(args.impl)  # the function defaults to lse, as for check and grade

    impl = fuzz.load_target(target)
    result = fuzz.replay(args.file, impl, device=args.device, target=target)
    print(result.summary())
    return 0 if result.passed else 1
