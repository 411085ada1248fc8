"""``lse-fuzz mutate TARGET`` and ``lse-fuzz mutants``: one mutation engine, two presets.

    lse-fuzz mutate path/to/kernel.py:lse                      # every operator at every site
    lse-fuzz mutate path/to/kernel.py:lse --tests "pytest -q tests/test_kernel.py"
    lse-fuzz mutate reference:lse --operators fill_value_zero,mask_off_by_one
    lse-fuzz mutate path/to/kernel.py --list                   # the mutants, without running them
    lse-fuzz mutate path/to/kernel.py --show MUTANT            # one mutant's diff
    lse-fuzz mutate --operators-list                           # the operators and their pitfalls
    lse-fuzz mutants                                           # the bundled catalog on reference:lse

``mutants`` is ``mutate reference:lse`` with the bundled catalog as the source of mutants and the
rule "every mutant killed"; both take the same options (see :mod:`fuzz.commands.mutants`).

Exit code: 0 when the run passes its rule (``mutate``: it finished, and with ``--fail-under S`` the
score is at least S; ``mutants``: every mutant was Killed), 1 when it does not; 2 for bad input
(missing file, no @triton.jit kernel, a --tests command that fails on the unmutated kernel) or a
failed gate. Reports: OUT_DIR/mutation.json (Stryker schema), mutation.md (a pull-request comment),
mutation.html (opens offline); counterexamples in OUT_DIR/reproducers.
"""

from __future__ import annotations

import argparse
import os

from .. import option_table


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "mutate",
        help="mutation analysis of any Triton LSE kernel: kernel-aware mutants, the fuzzer and your tests",
        description="Find the @triton.jit kernels TARGET runs and its launcher, plant one realistic bug at a time "
                    "(kernel-aware operators: masks, fill values, the row max, exp/log, dtypes, strides, index "
                    "widths, tile loops, the grid, NaN/inf guards), and see whether the fuzzer (and --tests) "
                    "catch each one.",
        epilog="Statuses: Killed, Survived, Timeout, CompileError, RuntimeError, NoCoverage (the mutated line "
               "never ran on a generated input). Score = detected / valid (Stryker).",
    )
    parser.add_argument("target", nargs="?", metavar="TARGET", help="path/to/kernel.py[:func] or reference:lse")
    option_table.add_arguments(parser, "mutate")
    return parser


def uses_workers(args: argparse.Namespace) -> bool:
    """Whether this run starts isolated workers (the CLI then starts their fork server early)."""
    return not (args.list or args.show is not None or getattr(args, "operators_list", False)
                or (args.command == "mutate" and args.target is None))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from reference.errors import InvalidArgument

    from ..grading import GradeOptions
    from ..mutation import OPERATORS, ExitRule, GateFailure, catalog, discover, generate, run_mutation
    from ..mutation.report import budgets, headline, rich_tables, write_reports
    from ..outcomes import ExitCode

    console = Console()
    if not console.is_terminal:  # a log or a pipe: do not fold names to 80 columns
        console = Console(width=200)
    bundled = args.command == "mutants"
    if getattr(args, "operators_list", False):
        for op in OPERATORS.values():
            console.print(f"[bold]{op.name}[/]: {op.pitfall} [dim]({op.documented})[/]")
        return ExitCode.OK
    if not bundled and args.target is None:
        raise InvalidArgument("TARGET is missing; give the kernel's launcher: lse-fuzz mutate path/to/kernel.py:lse.")
    operators = args.operators.split(",") if getattr(args, "operators", None) else None
    if args.list or args.show is not None:
        mutants = list(catalog().values()) if bundled else generate(discover(args.target), operators)
        return _list_or_show(console, args, mutants)
    _validate(args)
    names = (args.names or None) if bundled else args.mutant
    options = GradeOptions.from_args(args, jobs=1)  # the run's jobs are its own (run_mutation)
    with _Progress(Console(stderr=True), not args.quiet) as update:
        try:
            report = run_mutation(
                None if bundled else args.target, options=options, source="catalog" if bundled else "operators",
                mutants=names, operators=operators, jobs=args.jobs, timeout_factor=args.timeout_factor,
                timeout_floor=args.timeout_floor, thorough_budget=args.thorough_budget, matrix=args.matrix,
                tests=args.tests, tests_root=args.tests_root, cache=None if args.no_cache else _cache(args),
                out_dir=args.out_dir, exit_rule=ExitRule.ALL_KILLED if bundled else ExitRule.FAIL_UNDER,
                fail_under=args.fail_under, progress=update)
        except GateFailure as failure:
            update.stop()
            raise InvalidArgument(str(failure)) from None
    for table in rich_tables(report):
        console.print(table)
    paths = write_reports(report, args.out_dir)
    console.print(f"{headline(report)}; {report.summary()}; {report.reused} verdicts reused, {report.judged} judged")
    console.print(budgets(report), markup=False, highlight=False)
    for r in report.survivors:
        console.print(f"[bold red]survived[/] {r.name}: look here: a real gap, or an equivalent mutant")
        console.print(r.mutant.diff(), markup=False, highlight=False)
    console.print(f"reports: {paths['json']}, {paths['markdown']}, {paths['html']}")
    if report.exit_code and bundled:
        console.print(f"[bold red]not every mutant was killed[/]: see the table above and {paths['markdown']}")
    return report.exit_code


def _cache(args: argparse.Namespace):
    from ..mutation.runner import CACHE

    return args.cache_dir or CACHE


def _validate(args: argparse.Namespace) -> None:
    """The run's own flags as typed (the fuzzing options are GradeOptions.from_args's; the runner
    validates its arguments too, by their Python names)."""
    from .. import validate

    for value, name, low in ((args.jobs, "--jobs", 1), (args.thorough_budget, "--thorough-budget", 0)):
        if value is not None:
            validate.integer(value, name=name, low=low)
    validate.number(args.timeout_factor, name="--mutant-timeout-factor", low=0)
    validate.number(args.timeout_floor, name="--mutant-timeout-floor", low=1)
    if args.fail_under is not None:
        validate.number(args.fail_under, name="--fail-under", low=0)


def _list_or_show(console, args: argparse.Namespace, mutants: list) -> int:
    from reference.errors import InvalidArgument

    if args.show is not None:
        chosen = [m for m in mutants if m.name == args.show]
        if not chosen:
            raise InvalidArgument(f"--show={args.show!r} is not a mutant; choose from: "
                                  f"{', '.join(m.name for m in mutants[:20])}{' ...' if len(mutants) > 20 else ''} "
                                  "(see --list).")
        print(chosen[0].diff(), end="")
        return 0
    from rich.markup import escape

    for m in mutants:
        where = f"{m.function} ({'kernel' if m.kernel else 'launcher'})"
        expected = f" (expected check: {m.expected_check}) {m.pitfall}" if m.expected_check else ""
        # One line per mutant, however long (a terminal wraps it; a pipe or grep gets it whole).
        console.print(f"{escape(m.name)}  [dim]{escape(where)}:[/] "
                      f"{escape(repr(m.original.strip()))} -> {escape(repr(m.replacement.strip()))}{escape(expected)}",
                      highlight=False, soft_wrap=True)
    console.print(f"{len(mutants)} mutants")
    return 0


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
            label = "again: survivors, timeouts" if phase.startswith("again") else phase
            self.tasks[phase] = self.bar.add_task(label, total=total)
        self.bar.update(self.tasks[phase], completed=done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __exit__(self, *exc_info) -> None:
        self.stop()
