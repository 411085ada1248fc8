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

from .. import defaults
from .renamed import add_renamed

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


def add_fuzz_options(parser: argparse.ArgumentParser, *, budget: int = defaults.CHECK_BUDGET,
                     timeout: float | None = None) -> None:
    """Options shared by check and grade (what decides a verdict)."""
    group = parser.add_argument_group("fuzzing")
    group.add_argument("--budget", type=int, default=budget, metavar="N",
                       help=f"examples to generate unless a check fails first (default {budget}; about 3 calls each)")
    group.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the example generator (default 0)")
    group.add_argument("--private-seed", metavar="SECRET", default=None,
                       help="mix a secret into the seed so implementations cannot be tuned to the public one "
                            "(reports show only a fingerprint); env:NAME reads it from an environment variable "
                            "and file:PATH from a file, so it stays out of the process list")
    group.add_argument("--checks", metavar="NAMES", default=None,
                       help="comma-separated subset of the checks (default: all)")
    group.add_argument("--device", default="auto", help="auto (CUDA when present, default), cpu, cuda or cuda:N")
    group.add_argument("--profile", default=None, help="Hypothesis settings profile: lse-ci, lse-thorough, lse-gpu")
    group.add_argument("--max-elements", type=int, default=None, metavar="N",
                       help="largest M*N drawn (default 65536 on the CPU, 2**22 on CUDA)")
    group.add_argument("--parts", type=int, default=None, metavar="N",
                       help="split the examples into N runs of seeds derived from --seed (default: 2 on the CPU, 4 "
                            "on a GPU, each part at least 50 examples); check runs them side by side, one per core")
    group.add_argument("--shrink-seconds", type=float, default=None, metavar="S",
                       help="how long a failure may be shrunk (default 10 on the CPU and on a GPU; 0: not at "
                            "all); past it the smallest failing input found so far is reported, and the report "
                            "says shrinking stopped there")
    group.add_argument("--backward", action="store_true",
                       help="also check the gradient: autograd's dx for the upstream gradient g_i = ((37 i) mod 17 - "
                            "8) / 4 against g * softmax(x) (the result must support autograd; 2-D lse(x) only)")
    group.add_argument("--no-huge-offsets", dest="huge_offsets", action="store_false",
                       help="do not draw inputs whose elements lie 2**31 or more elements into their storage "
                            "(drawn by default: they expose 32-bit index math)")
    declared = parser.add_argument_group(
        "declared contract", "what the implementation supports; only such inputs are generated (default: everything)")
    declared.add_argument("--contract", choices=("strict", "finite"), default="strict",
                          help="strict: every input, NaN and +inf included (default); finite: no NaN or +inf inputs")
    declared.add_argument("--dtypes", metavar="NAMES", default=None,
                          help="comma-separated input dtypes it accepts (default: float32,float16,bfloat16,float64)")
    declared.add_argument("--layouts", choices=("contiguous", "rows", "any"), default="any",
                          help="contiguous: contiguous rows only; rows: any row stride, column stride 1; "
                               "any: any strides (default)")
    declared.add_argument("--output-dtype", choices=("float32", "input", "either"), default="either",
                          help="the result's dtype: float32, the input's, or either (default)")
    declared.add_argument("--max-n", type=int, default=None, metavar="N",
                          help="the longest row it accepts (default: any)")
    add_call_options(parser)
    limits = parser.add_argument_group("limits")
    limits.add_argument("--call-timeout", type=float, default=defaults.CALL_TIMEOUT, metavar="S",
                        help="a call's first deadline, not counting the seconds it spends compiling (default "
                             f"{defaults.CALL_TIMEOUT:g}); past it the call is timed against reference.lse on "
                             "the same input, and only a call past that second deadline too is a hang")
    limits.add_argument("--compile-timeout", type=float, default=defaults.COMPILE_TIMEOUT, metavar="S",
                        help="seconds one call may spend compiling (Triton, autotuning, torch.compile; default "
                             f"{defaults.COMPILE_TIMEOUT:g}): compiling never counts as a hang before that, "
                             "and a compile over 5 s is reported as a finding")
    limits.add_argument("--worker-timeout", dest="timeout", type=float, default=timeout, metavar="S",
                        help="seconds the implementation's worker may live in all, every call and compile "
                             "included" + (f" (default {timeout:g})" if timeout else " (default: no limit)"))
    limits.add_argument("--fail-slower-than", dest="time_limit", type=float, default=None, metavar="S",
                        help="a call's own time as a check: a call slower than S seconds fails the time_limit "
                             "check (default: a call far slower than reference.lse on the same input is "
                             "reported as slow, not failed)")
    add_renamed(limits, "--timeout", "--worker-timeout", dest="timeout", type=float)
    add_renamed(limits, "--time-limit", "--fail-slower-than", dest="time_limit", type=float)
    limits.add_argument("--memory-limit", type=float, default=None, metavar="GIB",
                        help="memory a CPU worker's candidate may use, in GiB (default: half the machine's "
                             "memory shared among the jobs, at most 16; 0: none); enforced as its address-space "
                             "limit plus room for the fuzzer's own inputs")
    bench = parser.add_argument_group("bandwidth (CUDA only)")
    bench.add_argument("--bench-shape", default="8192x8192", metavar="MxN",
                       help="fixed shape of the bandwidth measurement (default 8192x8192)")
    bench.add_argument("--bench-dtype", default="float32", choices=("float32", "float16", "bfloat16", "float64"),
                       help="dtype of the bandwidth measurement (default float32)")


def add_call_options(parser: argparse.ArgumentParser) -> None:
    """The call convention (fuzz.calls): how the implementation is called, where the LSE is."""
    call = parser.add_argument_group(
        "call convention", "how the implementation is called (default: lse(x) on a 2-D x, returning the (M,) LSE)")
    call.add_argument("--ndim", type=int, default=None, metavar="R",
                      help="the input's rank (default 2): every dim but --dim is a batch dim, of any size (1 and 0 "
                           "included) and any stride --layouts allows")
    call.add_argument("--dim", type=int, default=None, metavar="D",
                      help="the dim reduced (default -1; negative counts from the end)")
    call.add_argument("--keepdim", action="store_true", default=None,
                      help="the result keeps the reduced dim with size 1 (default: it drops it)")
    call.add_argument("--call-args", choices=("x", "x,dim", "x,dim,keepdim"), default=None, metavar="ARGS",
                      help="what is passed: x (lse(x): dim and keepdim fixed by the implementation; the default), "
                           "x,dim (lse(x, dim=D)) or x,dim,keepdim (lse(x, dim=D, keepdim=K))")
    call.add_argument("--result", default=None, metavar="PLACE",
                      help="where the LSE is in what it returns: an index of a returned tuple (e.g. 1 for "
                           "(out, lse)), or the key of a returned dict or attribute of a returned object "
                           "(e.g. lse); default: the result is the LSE")


def call_options(args: argparse.Namespace) -> dict[str, object]:
    """The GradeOptions fields of the call convention given on the command line (none given: {})."""
    given = {"ndim": args.ndim, "dim": args.dim, "keepdim": args.keepdim, "call_args": args.call_args,
             "result": args.result}
    return {name: value for name, value in given.items() if value is not None}


def options_from_args(args: argparse.Namespace, *, bench: bool):
    """The validated GradeOptions of the parsed command line (InvalidArgument naming the flag otherwise)."""
    # Imported here, not at the top: `lse-fuzz --help` must not pay for torch and triton.
    import os
    from pathlib import Path

    from reference.errors import InvalidArgument

    from .. import validate
    from ..grading import GradeOptions
    from ..isolation import scrub_from_proc

    memory_limit = None
    if args.memory_limit is not None:
        gib = validate.number(args.memory_limit, name="--memory-limit", low=0)
        memory_limit = int(gib * (1 << 30))
    private_seed = args.private_seed
    if private_seed is not None and private_seed.startswith("env:"):
        name = private_seed[4:]
        if name not in os.environ:
            raise InvalidArgument(f"--private-seed=env:{name}, but the environment variable {name} is not set.")
        private_seed = os.environ.pop(name)
    elif private_seed is not None and private_seed.startswith("file:"):
        path = private_seed[5:]
        try:
            private_seed = Path(path).read_text().strip()
        except OSError as exc:
            raise InvalidArgument(f"--private-seed=file:{path}: cannot read it ({exc.strerror}).") from None
    if private_seed:
        scrub_from_proc(private_seed)  # again: a value main() was given, not this process's argv
    return GradeOptions(
        budget=args.budget, seed=args.seed, private_seed=private_seed, contract=args.contract,
        dtypes=None if args.dtypes is None else tuple(part.strip() for part in args.dtypes.split(",")),
        layouts=args.layouts, output_dtype=args.output_dtype, max_n=args.max_n, checks=args.checks,
        device=args.device, call_timeout=args.call_timeout, compile_timeout=args.compile_timeout,
        timeout=args.timeout, time_limit=args.time_limit,
        memory_limit=memory_limit,
        huge_offsets=args.huge_offsets, max_elements=args.max_elements, profile=args.profile, parts=args.parts,
        shrink_seconds=args.shrink_seconds, bench=bench,
        bench_shape=args.bench_shape, bench_dtype=args.bench_dtype, backward=args.backward, **call_options(args),
    ).validated(cli=True)


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
    add_fuzz_options(parser)
    output = parser.add_argument_group("output")
    output.add_argument("--json", metavar="FILE", default=None, help="write the result as JSON")
    output.add_argument("--markdown", metavar="FILE", default=None,
                        help="write a Markdown summary (e.g. for a pull-request comment)")
    output.add_argument("--reproducers", metavar="DIR", default=defaults.REPRODUCER_DIR,
                        help="where failing inputs are saved (default .lse-fuzz)")
    output.add_argument("--bench", action="store_true", help="on CUDA, also measure bandwidth after a pass")
    return parser


def uses_workers(args: argparse.Namespace) -> bool:
    """Whether this run starts isolated workers (the CLI then starts their fork server early)."""
    return True


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from reference.errors import InvalidArgument

    from ..grading import evaluate, format_record, render_markdown
    from ..grading.evaluate import blame_signals
    from ..grading.options import use_torch_threads
    from ..grading.reports import atomic_write
    from ..isolation import SignalGuard
    from ..outcomes import CHECK_EXIT_CODES, Verdict
    from ..target import resolve_target

    options = options_from_args(args, bench=args.bench)
    use_torch_threads(options)
    target = resolve_target(args.target)
    for name in ("json", "markdown"):
        value = getattr(args, name)
        if value is not None and not Path(value).parent.is_dir():
            raise InvalidArgument(f"--{name}={value!r}: the directory {str(Path(value).parent)!r} does not exist.")
    what = f"budget {options.budget}, seed {options.seed}" + (" + private seed" if options.private_seed else "")
    what += "; forward and backward" if options.backward else ""

    def announce() -> None:  # only once the target loaded: a bad target gets one line, the error
        print(f"lse-fuzz check {target} on {options.device} ({what}; contract {options.declared().describe()})",
              file=sys.stderr, flush=True)

    with SignalGuard() as guard:  # a signal from the candidate's processes is ignored and makes it crash
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



