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

from ..defaults import MUTANT_BUDGET, MUTANT_SHRINK_SECONDS, MUTANT_TIMEOUT_FACTOR, MUTANT_TIMEOUT_FLOOR, OUT_DIR
from .renamed import add_renamed

# The runner's re-run defaults (fuzz.mutation.runner), repeated so that --help imports nothing heavy;
# a test keeps the two in step.
GPU_THOROUGH_BUDGET = 2000
CPU_THOROUGH_BUDGET = 300


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
    parser.add_argument("--operators", default=None, metavar="NAMES", help="comma-separated operators (default all)")
    parser.add_argument("--mutant", action="append", default=None, metavar="NAME",
                        help="run only this mutant (repeatable; names from --list)")
    parser.add_argument("--operators-list", action="store_true", help="list the operators and exit")
    add_options(parser)
    return parser


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of both presets."""
    add = parser.add_argument
    add("--tests", default=None, metavar="CMD",
        help="your test command, run against each mutant too (exit 0 = the tests pass)")
    add("--tests-root", default=None, metavar="DIR",
        help="the project directory CMD runs in, with the mutated file swapped in (default: .)")
    add("-j", "--jobs", type=int, default=None, metavar="N", help=f"mutants at once (default: the CPU count, "
                                                                    f"{os.cpu_count()})")
    add("--budget", type=int, default=MUTANT_BUDGET, metavar="N",
        help=f"examples per mutant (default {MUTANT_BUDGET}; a killed mutant stops at its first failure)")
    add("--thorough-budget", type=int, default=None, metavar="N",
        help=f"examples of the survivors' re-run with the lse-thorough profile (default: {GPU_THOROUGH_BUDGET} on "
             f"a GPU, {CPU_THOROUGH_BUDGET} on the CPU, sized to Triton's interpreter; 0: no re-run)")
    add("--seed", type=int, default=0, metavar="N", help="seed of the example generator (default 0)")
    add("--device", default=None, help="cpu or cuda (default: cuda when available)")
    add("--contract", choices=("strict", "finite"), default="strict",
        help="declared values policy: strict includes NaN and +inf inputs (default); finite leaves them out")
    add("--dtypes", default=None, metavar="LIST", help="declared input dtypes (default all four)")
    add("--layouts", default="any", choices=("contiguous", "rows", "any"), help="declared layouts")
    add("--output-dtype", default="either", choices=("float32", "input", "either"), help="declared output dtype")
    add("--max-n", type=int, default=None, metavar="N", help="declared longest row")
    add("--checks", default=None, metavar="NAMES", help="comma-separated checks (default all; the gate uses the same)")
    add("--max-elements", type=int, default=None, metavar="N",
        help="largest M*N drawn (default 4194304 on CUDA, 65536 on the CPU)")
    add("--parts", type=int, default=None, metavar="N",
        help="split each mutant's examples into N runs of seeds derived from --seed, run in turn (default 1)")
    add("--shrink-seconds", type=float, default=MUTANT_SHRINK_SECONDS, metavar="S",
        help=f"how long a killed mutant's failure is shrunk for the report (default {MUTANT_SHRINK_SECONDS:g}; "
             f"0: not at all)")
    add("--matrix", action="store_true", help="kill matrix: every check alone against every mutant")
    add("--mutant-timeout-factor", dest="timeout_factor", type=float, default=MUTANT_TIMEOUT_FACTOR, metavar="K",
        help=f"one mutant's run is stopped after max(K * the gate's run, floor) seconds (default "
             f"{MUTANT_TIMEOUT_FACTOR:g})")
    add("--mutant-timeout-floor", dest="timeout_floor", type=float, default=MUTANT_TIMEOUT_FLOOR, metavar="SECONDS",
        help=f"the least seconds one mutant's run gets (default {MUTANT_TIMEOUT_FLOOR:g})")
    add_renamed(parser, "--timeout-factor", "--mutant-timeout-factor", dest="timeout_factor", type=float)
    add_renamed(parser, "--timeout-floor", "--mutant-timeout-floor", dest="timeout_floor", type=float)
    add("--no-cache", action="store_true", help="judge every mutant again (no verdict cache)")
    add("--cache-dir", default=None, metavar="DIR", help="where verdicts are kept")
    add("--fail-under", type=float, default=None, metavar="SCORE",
        help="exit 1 when the mutation score (percent) is below SCORE")
    add("--out-dir", default=OUT_DIR, metavar="DIR",
        help=f"where mutation.json, mutation.md, mutation.html and reproducers go (default {OUT_DIR}/)")
    add("--list", action="store_true", help="list the mutants and exit")
    add("--show", metavar="MUTANT", default=None, help="print one mutant's diff and exit")
    add("-q", "--quiet", action="store_true", help="no progress bar")
    add_renamed(parser, "--no-progress", "--quiet", dest="quiet", flag_value=True)


def uses_workers(args: argparse.Namespace) -> bool:
    """Whether this run starts isolated workers (the CLI then starts their fork server early)."""
    return not (args.list or args.show is not None or getattr(args, "operators_list", False)
                or (args.command == "mutate" and args.target is None))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from reference.errors import InvalidArgument

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
    with _Progress(Console(stderr=True), not args.quiet) as update:
        try:
            report = run_mutation(
                None if bundled else args.target, source="catalog" if bundled else "operators", mutants=names,
                operators=operators, budget=args.budget, seed=args.seed, device=args.device, contract=args.contract,
                dtypes=args.dtypes.split(",") if args.dtypes else None, layouts=args.layouts,
                output_dtype=args.output_dtype, max_n=args.max_n,
                checks=args.checks.split(",") if args.checks else None, max_elements=args.max_elements,
                jobs=args.jobs, parts=args.parts, timeout_factor=args.timeout_factor,
                timeout_floor=args.timeout_floor, thorough_budget=args.thorough_budget, matrix=args.matrix,
                shrink_seconds=args.shrink_seconds,
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
    """The flags as typed (the runner validates its arguments too, by their Python names)."""
    from .. import validate
    from ..checks import validate_checks

    for value, name, low in ((args.budget, "--budget", 1), (args.seed, "--seed", 0), (args.jobs, "--jobs", 1),
                             (args.thorough_budget, "--thorough-budget", 0), (args.parts, "--parts", 1),
                             (args.max_elements, "--max-elements", 1), (args.max_n, "--max-n", 1)):
        if value is not None:
            validate.integer(value, name=name, low=low)
    validate.number(args.timeout_factor, name="--mutant-timeout-factor", low=0)
    validate.number(args.timeout_floor, name="--mutant-timeout-floor", low=1)
    validate.seconds(args.shrink_seconds, name="--shrink-seconds", zero=True)
    if args.fail_under is not None:
        validate.number(args.fail_under, name="--fail-under", low=0)
    if args.checks:
        validate_checks(args.checks, name="--checks")


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
    for m in mutants:
        where = f"{m.function} ({'kernel' if m.kernel else 'launcher'})"
        expected = f" (expected check: {m.expected_check}) {m.pitfall}" if m.expected_check else ""
        console.print(f"{m.name}  [dim]{where}:[/] {m.original.strip()!r} -> {m.replacement.strip()!r}{expected}",
                      highlight=False)
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
