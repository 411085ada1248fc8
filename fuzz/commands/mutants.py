"""``lse-fuzz mutants``: does the fuzz suite catch every planted bug of the bundled catalog?

    lse-fuzz mutants                         # gate, then every mutant, -j CPU count
    lse-fuzz mutants no_max_added nan_ignored --budget 500
    lse-fuzz mutants --matrix                # every check alone against every mutant
    lse-fuzz mutants --list                  # the mutants, their pitfalls and expected checks
    lse-fuzz mutants --show no_max_added     # the mutant's patch of the reference kernel, as a diff

The preset of ``lse-fuzz mutate`` (:mod:`fuzz.commands.mutate`, the same engine and options) with
TARGET ``reference:lse``, the files of ``mutants/`` as the mutants and the rule "every mutant
killed": exit code 0 every mutant killed; 1 some mutant survived, timed out, crashed or was never
reached; 2 the gate failed (the suite fails the correct kernel or passes a broken one) or the
arguments are invalid.
"""

from __future__ import annotations

import argparse

from .. import option_table
from .mutate import run, uses_workers

__all__ = ["add_parser", "run", "uses_workers"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "mutants",
        help="mutation analysis: run the suite against every planted-bug kernel in mutants/",
        description="Mutation analysis of the bundled catalog: gate the fuzz suite (the correct kernel must pass, "
                    "a broken one must fail), then run it against every planted-bug kernel in mutants/ (edits of "
                    "reference:lse), one worker process each. The same engine and options as `lse-fuzz mutate`.",
        epilog="Exit codes: 0 all killed, 1 a mutant not killed, 2 gate failure or bad arguments. Score = "
               "detected / valid (Stryker): detected = Killed + Timeout; CompileError and RuntimeError are not valid.",
    )
    parser.add_argument("names", nargs="*", metavar="MUTANT", help="mutants to run (default: all; see --list)")
    option_table.add_arguments(parser, "mutants")
    return parser
