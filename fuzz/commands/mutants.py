"""``lse-fuzz mutants``: does the fuzz suite catch every planted bug in mutants/?

    lse-fuzz mutants                         # gate, then every mutant, -j CPU count
    lse-fuzz mutants no_max_added nan_ignored --budget 500
    lse-fuzz mutants --matrix                # every check alone against every mutant
    lse-fuzz mutants --list                  # the mutants, their pitfalls and expected checks
    lse-fuzz mutants --show no_max_added     # the mutant's patch of the reference kernel, as a diff

Exit code: 0 every mutant killed; 1 some mutant survived, timed out or crashed; 2 the gate failed
(the suite fails the correct kernel or passes a broken one) or the arguments are invalid.
Reports: ``OUT_DIR/mutation.json`` (Stryker mutation-testing-report schema) and
``OUT_DIR/mutation.md`` (a pull-request comment); counterexamples in ``OUT_DIR/reproducers``.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..defaults import MUTANT_BUDGET as DEFAULT_BUDGET
from ..defaults import MUTANT_TIMEOUT_FACTOR as DEFAULT_TIMEOUT_FACTOR
from ..defaults import MUTANT_TIMEOUT_FLOOR as DEFAULT_TIMEOUT_FLOOR
from ..defaults import OUT_DIR as DEFAULT_OUT_DIR


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "mutants",
        help="mutation analysis: run the suite against every planted-bug kernel in mutants/",
        description="Mutation analysis: gate the fuzz suite (the correct kernel must pass, a broken one must "
                    "fail), then run it against every planted-bug kernel in mutants/, one worker process each.",
        epilog="Exit codes: 0 all killed, 1 a mutant not killed, 2 gate failure or bad arguments. Score = "
               "detected / valid (Stryker): detected = Killed + Timeout; CompileError and RuntimeError are not valid.",
    )
    parser.add_argument("names", nargs="*", metavar="MUTANT", help="mutants to run (default: all; see --list)")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help=f"worker processes at once (default: the CPU count, {os.cpu_count()})")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, metavar="N",
                        help=f"examples per mutant (default {DEFAULT_BUDGET}; a killed mutant stops at its first "
                             "failure)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the example generator (default 0)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--contract", choices=("strict", "finite"), default="strict",
                        help="strict: NaN and +inf inputs included (default); finite: left out")
    parser.add_argument("--timeout-factor", type=float, default=DEFAULT_TIMEOUT_FACTOR, metavar="K",
                        help="a mutant is killed after max(K * baseline, floor) seconds "
                             f"(default K={DEFAULT_TIMEOUT_FACTOR:g})")
    parser.add_argument("--timeout-floor", type=float, default=DEFAULT_TIMEOUT_FLOOR, metavar="SECONDS",
                        help=f"the least seconds a mutant gets (default {DEFAULT_TIMEOUT_FLOOR:g})")
    parser.add_argument("--checks", default=None, metavar="NAMES",
                        help="comma-separated checks of the suite (default: all; the gate uses the same)")
    parser.add_argument("--max-elements", type=int, default=None, metavar="N",
                        help="largest M*N drawn (default 4194304 on CUDA, 65536 on the CPU)")
    parser.add_argument("--parts", type=int, default=None, metavar="N",
                        help="split each mutant's examples into N runs of seeds derived from --seed; the gate runs "
                             "a correct kernel's parts side by side, a mutant runs them in turn (default: 1 on the "
                             "CPU, 4 on a GPU, where a cold gate is bound by compiling)")
    parser.add_argument("--matrix", action="store_true", help="kill matrix: every check alone against every mutant")
    parser.add_argument("--out-dir", default=str(DEFAULT_OUT_DIR), metavar="DIR",
                        help=f"where mutation.json, mutation.md and reproducers go (default {DEFAULT_OUT_DIR}/)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--show", metavar="MUTANT", default=None,
                        help="print the mutant's patch of the reference kernel (a unified diff) and exit")
    parser.add_argument("--no-progress", dest="show_progress", action="store_false", help="no progress bar")
    return parser


def uses_workers(args: argparse.Namespace) -> bool:
    """Whether this run starts isolated workers (the CLI then starts their fork server early)."""
    return not args.list and args.show is None


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from mutants import MUTANTS
    from reference.errors import InvalidArgument

    from ..mutation import GateFailure, rich_tables, run_mutation_analysis, write_reports
    from ..outcomes import ExitCode

    console = Console()
    if not console.is_terminal:  # a log or a pipe: do not fold names to 80 columns
        console = Console(width=200)
    if args.list:
        _print_list(console, MUTANTS)
        return ExitCode.OK
    if args.show is not None:
        if args.show not in MUTANTS:
            raise InvalidArgument(f"--show={args.show!r} is not a mutant; choose from: {', '.join(MUTANTS)}.")
        print(MUTANTS[args.show].diff(), end="")
        return ExitCode.OK
    # The flags as typed: the analysis validates its arguments too, by their Python names.
    from .. import validate
    from ..checks import validate_checks

    validate.integer(args.budget, name="--budget", low=1)
    validate.integer(args.seed, name="--seed", low=0)
    if args.jobs is not None:
        validate.integer(args.jobs, name="--jobs", low=1)
    validate.number(args.timeout_factor, name="--timeout-factor", low=0)
    validate.number(args.timeout_floor, name="--timeout-floor", low=1)
    if args.max_elements is not None:
        validate.integer(args.max_elements, name="--max-elements", low=1)
    if args.parts is not None:
        validate.integer(args.parts, name="--parts", low=1)
    if args.checks:
        validate_checks(args.checks, name="--checks")
    errors = Console(stderr=True)
    with _Progress(errors, args.show_progress) as update:
        try:
            report = run_mutation_analysis(
                args.names or None, jobs=args.jobs, budget=args.budget, seed=args.seed, device=args.device,
                contract=args.contract, timeout_factor=args.timeout_factor, timeout_floor=args.timeout_floor,
                matrix=args.matrix, checks=args.checks.split(",") if args.checks else None,
                out_dir=args.out_dir, max_elements=args.max_elements, parts=args.parts, progress=update,
            )
        except GateFailure as failure:
            update.stop()
            print(f"lse-fuzz: error: {failure}", file=sys.stderr)
            return ExitCode.USAGE
    for table in rich_tables(report):
        console.print(table)
    paths = write_reports(report, args.out_dir)
    console.print(f"{report.summary()}; reports: {paths['json']}, {paths['markdown']}")
    if report.exit_code:
        console.print("[bold red]not every mutant was killed[/]: see the table above and the reasons in "
                      f"{paths['markdown']}")
    return report.exit_code


def _print_list(console, mutants) -> None:
    from rich.table import Table

    table = Table(title=f"{len(mutants)} mutants", title_justify="left")
    for column in ("mutant", "pitfall", "expected check", "documented"):
        table.add_column(column, overflow="fold")
    for mutant in mutants.values():
        table.add_row(mutant.name, mutant.pitfall, mutant.expected_check, mutant.source)
    console.print(table)


class _Progress:
    """A rich progress bar for the gate and the mutants (a no-op when disabled or not a terminal)."""

    def __init__(self, console, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled and console.is_terminal
        self.bar = None
        self.tasks: dict[str, int] = {}

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=self.console, transient=False)
            self.bar.start()
        return self

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.bar is None:
            return
        if phase not in self.tasks:
            label = phase if phase in ("gate", "mutants") else "again: survivors, timeouts"
            self.tasks[phase] = self.bar.add_task(label, total=total)
        self.bar.update(self.tasks[phase], completed=done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __exit__(self, *exc_info) -> None:
        self.stop()
