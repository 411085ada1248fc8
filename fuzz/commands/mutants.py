"""``lse-fuzz mutants``: does the fuzz suite catch every planted bug of the bundled catalog?

    lse-fuzz mutants                         # gate, then every mutant, -j CPU count
    lse-fuzz mutants no_max_added nan_ignored --budget 500
    lse-fuzz mutants --matrix                # every check alone against every mutant
    lse-fuzz mutants --list                  # the mutants, their pitfalls and expected checks
    lse-fuzz mutants --show no_max_added     # the mutant's patch of the reference kernel, as a diff
    lse-fuzz mutants --op merge_state        # the merge kernel's mutants (fuzz.merge.mutants)

The preset of ``lse-fuzz mutate`` (:mod:`fuzz.commands.mutate`, the same engine and options) with
TARGET ``reference:lse``, the files of ``mutants/`` as the mutants and the rule "every mutant
killed": exit code 0 every mutant killed; 1 some mutant survived, timed out, crashed or was never
reached; 2 the gate failed (the suite fails the correct kernel or passes a broken one) or the
arguments are invalid.
"""

from __future__ import annotations

import argparse

from .. import option_table
from .mutate import run as run_mutation_command
from .mutate import uses_workers as mutation_uses_workers

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


def uses_workers(args: argparse.Namespace) -> bool:
    return getattr(args, "op", "lse") == "lse" and mutation_uses_workers(args)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "op", "lse") == "combine":
        from reference.errors import InvalidArgument

        raise InvalidArgument("--op combine: no bundled mutants of a combine kernel; choose lse or merge_state.")
    if getattr(args, "op", "lse") != "lse":
        from ..isolation import release_signals
        from ..merge.mutants import run_merge_mutants

        release_signals()  # the mutants' children are judged by their exit status, not by a guard
        return run_merge_mutants(args)
    return run_mutation_command(args)
