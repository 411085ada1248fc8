"""``lse-fuzz mutate TARGET``: does the fuzzer (and do your tests) notice a realistic bug in your kernel?

    lse-fuzz mutate path/to/kernel.py:lse                      # every operator at every site
    lse-fuzz mutate path/to/kernel.py:lse --tests "pytest -q tests/test_kernel.py"
    lse-fuzz mutate reference:lse --operators fill_value_zero,mask_off_by_one
    lse-fuzz mutate path/to/kernel.py --list                   # the mutants, without running them
    lse-fuzz mutate path/to/kernel.py --show MUTANT            # one mutant's diff
    lse-fuzz mutate --operators-list                           # the operators and their pitfalls

Exit code: 0 when the run finished (the score is in the reports; with ``--fail-under S``, 1 when it
is below S); 2 for bad input (missing file, no @triton.jit kernel, a --tests command that fails on
the unmutated kernel) or a failed gate. Reports: OUT_DIR/mutation.json (Stryker schema),
mutation.md (a pull-request comment), mutation.html (opens offline).
"""

from __future__ import annotations

import argparse
import os

from ..defaults import MUTANT_TIMEOUT_FACTOR, MUTANT_TIMEOUT_FLOOR, OUT_DIR

# The runner's defaults (fuzz.mutate.runner), repeated here so that --help imports nothing heavy;
# a test keeps the two in step.
DEFAULT_BUDGET = 100
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
    parser.add_argument("--tests", default=None, metavar="CMD",
                        help="your test command, run against each mutant too (exit 0 = the tests pass)")
    parser.add_argument("--tests-root", default=None, metavar="DIR",
                        help="the project directory CMD runs in, with the mutated file swapped in (default: .)")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help=f"mutants at once (default: the CPU count, {os.cpu_count()})")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, metavar="N",
                        help=f"examples per mutant (default {DEFAULT_BUDGET})")
    parser.add_argument("--thorough-budget", type=int, default=None, metavar="N",
                        help="examples of the survivors' re-run with the lse-thorough profile (default: "
                             f"{GPU_THOROUGH_BUDGET} on a GPU, {CPU_THOROUGH_BUDGET} on the CPU, sized to Triton's "
                             f"interpreter; --thorough-budget {GPU_THOROUGH_BUDGET} asks for the GPU-sized re-run "
                             "there; 0: no re-run)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the example generator (default 0)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--contract", choices=("strict", "finite"), default="strict",
                        help="declared values policy (see lse-fuzz check)")
    parser.add_argument("--dtypes", default=None, metavar="LIST", help="declared input dtypes (default all four)")
    parser.add_argument("--layouts", default="any", choices=("contiguous", "rows", "any"), help="declared layouts")
    parser.add_argument("--output-dtype", default="either", choices=("float32", "input", "either"),
                        help="declared output dtype")
    parser.add_argument("--max-n", type=int, default=None, metavar="N", help="declared longest row")
    parser.add_argument("--checks", default=None, metavar="NAMES", help="comma-separated checks (default all)")
    parser.add_argument("--max-elements", type=int, default=None, metavar="N", help="largest M*N drawn")
    parser.add_argument("--timeout-factor", type=float, default=MUTANT_TIMEOUT_FACTOR, metavar="K",
                        help=f"a mutant is stopped after max(K * the gate's run, floor) (default {MUTANT_TIMEOUT_FACTOR:g})")
    parser.add_argument("--timeout-floor", type=float, default=MUTANT_TIMEOUT_FLOOR, metavar="SECONDS",
                        help=f"the least seconds a mutant gets (default {MUTANT_TIMEOUT_FLOOR:g})")
    parser.add_argument("--no-cache", action="store_true", help="judge every mutant again (no verdict cache)")
    parser.add_argument("--cache-dir", default=None, metavar="DIR", help="where verdicts are kept")
    parser.add_argument("--fail-under", type=float, default=None, metavar="SCORE",
                        help="exit 1 when the mutation score (percent) is below SCORE")
    parser.add_argument("--out-dir", default=OUT_DIR, metavar="DIR",
                        help=f"where mutation.json, mutation.md and mutation.html go (default {OUT_DIR}/)")
    parser.add_argument("--list", action="store_true", help="list TARGET's mutants and exit")
    parser.add_argument("--show", metavar="MUTANT", default=None, help="print one mutant's diff and exit")
    parser.add_argument("--operators-list", action="store_true", help="list the operators and exit")
    parser.add_argument("--no-progress", dest="show_progress", action="store_false", help="no progress bar")
    return parser


def uses_workers(args: argparse.Namespace) -> bool:
    """Whether this run starts isolated workers (the CLI then starts their fork server early)."""
    return not args.list and args.show is None and not args.operators_list and args.target is not None


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from reference.errors import InvalidArgument

    from .. import validate
    from ..mutate import OPERATORS, discover, generate, run_mutate
    from ..mutate.report import budgets, headline, rich_tables, write_reports
    from ..mutation import GateFailure
    from ..outcomes import ExitCode
    from .mutants import _Progress

    console = Console()
    if not console.is_terminal:
        console = Console(width=200)
    if args.operators_list:
        for op in OPERATORS.values():
            console.print(f"[bold]{op.name}[/]: {op.pitfall} [dim]({op.documented})[/]")
        return ExitCode.OK
    if args.target is None:
        raise InvalidArgument("TARGET is missing; give the kernel's launcher: lse-fuzz mutate path/to/kernel.py:lse.")
    operators = args.operators.split(",") if args.operators else None
    if args.list or args.show is not None:
        mutants = generate(discover(args.target), operators)
        if args.show is not None:
            chosen = [m for m in mutants if m.name == args.show]
            if not chosen:
                raise InvalidArgument(f"--show={args.show!r} is not a mutant of {args.target}; see --list.")
            print(chosen[0].diff(), end="")
            return ExitCode.OK
        for m in mutants:
            where = "kernel" if m.kernel else "launcher"
            console.print(f"{m.name}  [dim]{m.function} ({where}):[/] {m.original.strip()!r} -> {m.replacement.strip()!r}")
        console.print(f"{len(mutants)} mutants")
        return ExitCode.OK
    for value, name, low in ((args.budget, "--budget", 1), (args.seed, "--seed", 0),
                             (args.thorough_budget, "--thorough-budget", 0)):
        if value is not None:
            validate.integer(value, name=name, low=low)
    if args.fail_under is not None:
        validate.number(args.fail_under, name="--fail-under", low=0)
    cache = None if args.no_cache else (args.cache_dir or _default_cache())
    errors = Console(stderr=True)
    with _Progress(errors, args.show_progress) as update:
        try:
            report = run_mutate(
                args.target, operators=operators, budget=args.budget, seed=args.seed, device=args.device,
                contract=args.contract, dtypes=args.dtypes.split(",") if args.dtypes else None, layouts=args.layouts,
                output_dtype=args.output_dtype, max_n=args.max_n,
                checks=args.checks.split(",") if args.checks else None, max_elements=args.max_elements,
                jobs=args.jobs, timeout_factor=args.timeout_factor, timeout_floor=args.timeout_floor,
                thorough_budget=args.thorough_budget, tests=args.tests, tests_root=args.tests_root, cache=cache,
                only=args.mutant, progress=update)
        except GateFailure as failure:
            update.stop()
            raise InvalidArgument(str(failure)) from None
    for table in rich_tables(report):
        console.print(table)
    paths = write_reports(report, args.out_dir)
    console.print(f"{headline(report)}; {report.summary()}; {report.reused} verdicts reused, {report.judged} judged")
    console.print(f"{budgets(report)}", markup=False, highlight=False)
    for r in report.survivors:
        console.print(f"[bold red]survived[/] {r.name}: look here: a real gap, or an equivalent mutant")
        console.print(r.mutant.diff(), markup=False, highlight=False)
    console.print(f"reports: {paths['json']}, {paths['markdown']}, {paths['html']}")
    if args.fail_under is not None and (report.score or 0.0) < args.fail_under:
        return ExitCode.FAILED
    return ExitCode.OK


def _default_cache():
    from ..mutate.runner import CACHE

    return CACHE
