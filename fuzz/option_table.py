"""Every option of every command, declared once: name, type, default, help, and which commands take it.

The ``lse-fuzz`` sub-commands' argparse options, the pytest plugin's ``--lse-*`` options and the
names the Python API validates are all built from :data:`OPTIONS`; adding an option is one entry
here (and, for a new knob, the field of :class:`fuzz.grading.GradeOptions` that carries it)::

    Option("max_n", "--max-n", int, None, "the longest row it accepts (default: any)",
           group=CONTRACT, commands=FUZZING, plugin=True, metavar="N", api="max_n")

``commands`` names the sub-commands (:data:`COMMANDS`) that take the option; ``plugin`` adds
``--lse-NAME`` to the pytest plugin. A command may give an option its own default or help
(``defaults``/``helps``); ``{default}`` in a help is the command's default. Light on purpose
(standard library and :mod:`fuzz.defaults` only): ``lse-fuzz --help`` and pytest's start-up read it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from . import defaults

__all__ = ["CALL", "COMMANDS", "CONTRACT", "FUZZING", "OPTIONS", "Option", "add_arguments", "add_plugin_options",
           "api_options", "cli_name", "given", "option", "plugin_options"]

COMMANDS = ("check", "grade", "mutate", "mutants", "replay")
FUZZING = ("check", "grade", "mutate", "mutants")
"""The commands that fuzz: each takes the whole declared contract, the call convention and --backward."""
MUTATION = ("mutate", "mutants")

# Argument groups, in --help order: (title, description).
RUN = ("fuzzing", None)
CONTRACT = ("declared contract", "what the implementation supports; only such inputs are generated (default: "
                                 "everything)")
CALL = ("call convention", "how the implementation is called (default: lse(x) on a 2-D x, returning the (M,) LSE)")
LIMITS = ("limits", None)
BENCH = ("bandwidth (CUDA only)", None)
MUTATION_GROUP = ("mutation", None)
EXECUTOR = ("executor", None)
OUTPUT = ("output", None)
IMPL = ("implementation under test", None)
OP = ("operation", "what the implementation computes (default: the row-wise LSE)")
GROUPS = (IMPL, OP, RUN, CONTRACT, CALL, LIMITS, BENCH, MUTATION_GROUP, EXECUTOR, OUTPUT)

@dataclass(frozen=True)
class Option:
    """One option. ``name`` is where its value lands (the argparse ``dest``, the field of
    GradeOptions or keyword of the API it sets); ``flag`` its spelling; ``type`` converts the text
    (``bool``: a flag, ``store_true``, or ``store_false`` with ``negate``)."""

    name: str
    flag: str
    type: Callable | None
    default: object
    help: str
    group: tuple[str, str | None] = RUN
    commands: tuple[str, ...] = FUZZING
    plugin: bool = False
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    short: str | None = None  # e.g. "-j"
    negate: bool = False  # a bool flag that stores False (--no-huge-offsets)
    append: bool = False  # repeatable, the values collected in a list
    defaults: dict[str, object] = field(default_factory=dict)  # command (or "plugin") -> its own default
    helps: dict[str, str] = field(default_factory=dict)  # command (or "plugin") -> its own help
    api: str | None = None  # the keyword of lse_fuzz.check (and lse_suite) it sets; None: it sets none
    plugin_spelling: str | None = None  # the plugin's flag where "--lse-" + flag would stutter (--lse-base)

    def default_for(self, command: str) -> object:
        return self.defaults.get(command, self.default)

    def help_for(self, command: str) -> str:
        text = self.helps.get(command, self.help)
        return text.replace("{default}", _shown(self.default_for(command)))

    @property
    def plugin_flag(self) -> str:
        return self.plugin_spelling or "--lse-" + self.flag.removeprefix("--")

    def kwargs(self, command: str) -> dict[str, object]:
        """The keyword arguments of ``add_argument`` for ``command``."""
        kwargs: dict[str, object] = {"dest": self.name, "default": self.default_for(command),
                                     "help": self.help_for(command)}
        if self.type is bool:
            kwargs["action"] = "store_false" if self.negate else "store_true"
        else:
            kwargs.update(type=self.type, metavar=self.metavar)
            if self.choices is not None:
                kwargs["choices"] = self.choices
            if self.append:
                kwargs["action"] = "append"
        return kwargs


def _shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_FUZZ_AND_REPLAY = (*FUZZING, "replay")

OPTIONS: tuple[Option, ...] = (
    # -- the operation ---------------------------------------------------------------------------
    Option("op", "--op", str, "lse",
           "lse: lse(x) -> the row-wise LSE (default); merge_state: merge_state(v_a, s_a, v_b, s_b) -> (v, s), two "
           "attention states (v (T, H, D), s (T, H) float32) merged; combine: combine(v, s) -> (v_out, s_out), S split "
           "states (v (S, T, H, D), s (S, T, H)) combined as split-K flash decoding does",
           group=OP, commands=("check", "grade", "mutants"), choices=("lse", "merge_state", "combine"), api="op",
           plugin=True,
           helps={"mutants": "lse: the row LSE kernel's mutants (default); merge_state: the merge kernel's "
                             "(mutants.MERGE_NAMES), each fuzzed as check --op merge_state fuzzes a kernel",
                  "plugin": "what --lse-impl computes: lse (default), merge_state or combine (the shipped suite "
                            "then has the op's checks)"}),
    Option("lse_base", "--lse-base", str, "e",
           "the base of every LSE the implementation reads and returns: e (natural logs: vLLM, SGLang, FlashAttention; "
           "default) or 2 (FlashInfer, TensorRT-LLM)", group=OP, commands=("check", "grade"),
           choices=("e", "2"), api="lse_base", plugin=True, plugin_spelling="--lse-base"),
    # -- fuzzing ---------------------------------------------------------------------------------
    Option("budget", "--budget", int, defaults.CHECK_BUDGET,
           "examples to generate unless a check fails first (default {default}; about 3 calls each)",
           plugin=True, metavar="N", defaults={m: defaults.MUTANT_BUDGET for m in MUTATION} | {"plugin": None},
           helps={**{m: "examples per mutant (default {default}; a killed mutant stops at its first failure)"
                     for m in MUTATION}, "plugin": "examples per check (default: the profile's, 50 for lse-ci)"}, api="budget"),
    Option("seed", "--seed", int, 0, "seed of the example generator (default 0)", plugin=True, metavar="N", api="seed"),
    Option("private_seed", "--private-seed", str, None,
           "mix a secret into the seed so implementations cannot be tuned to the public one (reports show only a "
           "fingerprint); env:NAME reads it from an environment variable and file:PATH from a file, so it stays out "
           "of the process list", commands=("check", "grade"), metavar="SECRET"),
    Option("checks", "--checks", str, None, "comma-separated subset of the checks (default: all)", metavar="NAMES",
           helps={m: "comma-separated checks (default all; the gate uses the same)" for m in MUTATION}, api="checks"),
    Option("device", "--device", str, "auto", "auto (CUDA when present, default), cpu, cuda or cuda:N", plugin=True,
           commands=_FUZZ_AND_REPLAY, defaults={"plugin": None, "replay": None},
           helps={"plugin": "cpu or cuda (default: cuda when available)",
                  "replay": "cpu or cuda (default: where the example was found, if present)"}, api="device"),
    Option("profile", "--profile", str, None, "Hypothesis settings profile: lse-ci, lse-thorough, lse-gpu",
           commands=("check", "grade"), plugin=True,
           defaults={"plugin": "lse-ci"}, helps={"plugin": "Hypothesis settings profile (default lse-ci)"}, api="profile"),
    Option("max_elements", "--max-elements", int, None,
           "largest M*N drawn (default 65536 on the CPU, 2**22 on CUDA)", metavar="N", api="max_elements"),
    Option("parts", "--parts", int, None,
           "split the examples into N runs of seeds derived from --seed (default: 2 on the CPU, 4 on a GPU, each "
           "part at least 50 examples); check runs them side by side, one per free core", metavar="N",
           helps={m: "split each mutant's examples into N runs of seeds derived from --seed, run in turn "
                     "(default 1)" for m in MUTATION}),
    Option("shrink_seconds", "--shrink-seconds", float, None,
           "how long a failure may be shrunk (default 10 on the CPU and on a GPU; 0: not at all); past it the "
           "smallest failing input found so far is reported, and the report says shrinking stopped there",
           metavar="S", defaults={m: defaults.MUTANT_SHRINK_SECONDS for m in MUTATION},
           helps={m: "how long a killed mutant's failure is shrunk for the report (default {default}; 0: not at "
                     "all)" for m in MUTATION}, api="shrink_seconds"),
    Option("backward", "--backward", bool, False,
           "also check the gradient: autograd's dx for the upstream gradient g_i = ((37 i) mod 17 - 8) / 4 against "
           "g * softmax(x) (the result must support autograd; 2-D lse(x) only)", api="backward"),
    Option("huge_offsets", "--no-huge-offsets", bool, True,
           "do not draw inputs whose elements lie 2**31 or more elements into their storage (drawn by default: "
           "they expose 32-bit index math)", negate=True, api="huge_offsets"),
    # -- the declared contract -------------------------------------------------------------------
    Option("contract", "--contract", str, "strict",
           "strict: every input, NaN and +inf included (default); finite: no NaN or +inf inputs",
           group=CONTRACT, plugin=True, choices=("strict", "finite"), api="contract"),
    Option("dtypes", "--dtypes", str, None,
           "comma-separated input dtypes it accepts (default: float32,float16,bfloat16,float64)",
           group=CONTRACT, plugin=True, metavar="NAMES", api="dtypes"),
    Option("layouts", "--layouts", str, "any",
           "contiguous: contiguous rows only; rows: any row stride, column stride 1; any: any strides (default)",
           group=CONTRACT, plugin=True, choices=("contiguous", "rows", "any"), api="layouts"),
    Option("output_dtype", "--output-dtype", str, "either",
           "the result's dtype: float32, the input's, or either (default)",
           group=CONTRACT, plugin=True, choices=("float32", "input", "either"), api="output_dtype"),
    Option("max_n", "--max-n", int, None, "the longest row it accepts (default: any)",
           group=CONTRACT, plugin=True, metavar="N", api="max_n"),
    # -- the call convention (None: not given, the default convention) ---------------------------
    Option("ndim", "--ndim", int, None,
           "the input's rank (default 2): every dim but --dim is a batch dim, of any size (1 and 0 included) and "
           "any stride --layouts allows", group=CALL, commands=_FUZZ_AND_REPLAY, plugin=True, metavar="R"),
    Option("dim", "--dim", int, None, "the dim reduced (default -1; negative counts from the end)",
           group=CALL, commands=_FUZZ_AND_REPLAY, plugin=True, metavar="D"),
    Option("keepdim", "--keepdim", bool, None,
           "the result keeps the reduced dim with size 1 (default: it drops it)",
           group=CALL, commands=_FUZZ_AND_REPLAY, plugin=True),
    Option("call_args", "--call-args", str, None,
           "what is passed: x (lse(x): dim and keepdim fixed by the implementation; the default), x,dim "
           "(lse(x, dim=D)) or x,dim,keepdim (lse(x, dim=D, keepdim=K))",
           group=CALL, commands=_FUZZ_AND_REPLAY, plugin=True, metavar="ARGS", choices=("x", "x,dim", "x,dim,keepdim")),
    Option("result", "--result", str, None,
           "where the LSE is in what it returns: an index of a returned tuple (e.g. 1 for (out, lse)), or the key "
           "of a returned dict or attribute of a returned object (e.g. lse); default: the result is the LSE",
           group=CALL, commands=_FUZZ_AND_REPLAY, plugin=True, metavar="PLACE"),
    # -- limits ----------------------------------------------------------------------------------
    Option("call_timeout", "--call-timeout", float, defaults.CALL_TIMEOUT,
           "a call's first deadline, not counting the seconds it spends compiling (default {default}); past it the "
           "call is timed against reference.lse on the same input, and only a call past that second deadline too "
           "is a hang (on the CPU, one whose worker uses no CPU for 2 s after the first deadline is a hang then)", group=LIMITS, commands=("check", "grade", "replay"), metavar="S",
           helps={"replay": "with --isolate: seconds the call may take (default {default})"}),
    Option("compile_timeout", "--compile-timeout", float, defaults.COMPILE_TIMEOUT,
           "seconds one call may spend compiling (Triton, autotuning, torch.compile; default {default}): compiling "
           "never counts as a hang before that, and a compile over 5 s is reported as a finding",
           group=LIMITS, commands=("check", "grade"), metavar="S"),
    Option("timeout", "--worker-timeout", float, None,
           "seconds the implementation's worker may live in all, every call and compile included (default: no "
           "limit)", group=LIMITS, commands=("check", "grade"), metavar="S", defaults={"grade": defaults.GRADE_TIMEOUT},
           helps={"grade": "seconds the implementation's worker may live in all, every call and compile included "
                           "(default {default})"}),
    Option("time_limit", "--fail-slower-than", float, None,
           "a call's own time as a check: a call slower than S seconds fails the time_limit check (default: a call "
           "far slower than reference.lse on the same input is reported as slow, not failed)",
           group=LIMITS, commands=("check", "grade"), metavar="S", api="time_limit"),
    Option("memory_limit", "--memory-limit", float, None,
           "memory a CPU worker's candidate may use, in GiB (default: half the machine's memory shared among the "
           "jobs, at most 16; 0: none); enforced as its address-space limit plus room for the fuzzer's own inputs",
           group=LIMITS, commands=("check", "grade"), metavar="GIB"),
    # -- bandwidth -------------------------------------------------------------------------------
    Option("bench_shape", "--bench-shape", str, "8192x8192",
           "fixed shape of the bandwidth measurement (default {default})", group=BENCH, commands=("check", "grade"),
           metavar="MxN"),
    Option("bench_dtype", "--bench-dtype", str, "float32", "dtype of the bandwidth measurement (default {default})",
           group=BENCH, commands=("check", "grade"), choices=("float32", "float16", "bfloat16", "float64")),
    # -- mutation --------------------------------------------------------------------------------
    Option("operators", "--operators", str, None, "comma-separated operators (default all)",
           group=MUTATION_GROUP, commands=("mutate",), metavar="NAMES"),
    Option("mutant", "--mutant", str, None, "run only this mutant (repeatable; names from --list)",
           group=MUTATION_GROUP, commands=("mutate",), metavar="NAME", append=True),
    Option("operators_list", "--operators-list", bool, False, "list the operators and exit",
           group=MUTATION_GROUP, commands=("mutate",)),
    Option("tests", "--tests", str, None, "your test command, run against each mutant too (exit 0 = the tests pass)",
           group=MUTATION_GROUP, commands=MUTATION, metavar="CMD"),
    Option("tests_root", "--tests-root", str, None,
           "the project directory CMD runs in, with the mutated file swapped in (default: .)",
           group=MUTATION_GROUP, commands=MUTATION, metavar="DIR"),
    Option("thorough_budget", "--thorough-budget", int, None,
           "examples of the survivors' re-run with the lse-thorough profile (default: 2000 on a GPU, 300 on the "
           "CPU, sized to Triton's interpreter; 0: no re-run)", group=MUTATION_GROUP, commands=MUTATION, metavar="N"),
    Option("matrix", "--matrix", bool, False, "kill matrix: every check alone against every mutant",
           group=MUTATION_GROUP, commands=MUTATION),
    Option("timeout_factor", "--mutant-timeout-factor", float, defaults.MUTANT_TIMEOUT_FACTOR,
           "one mutant's run is stopped after max(K * the gate's run, floor) seconds (default {default})",
           group=MUTATION_GROUP, commands=MUTATION, metavar="K"),
    Option("timeout_floor", "--mutant-timeout-floor", float, defaults.MUTANT_TIMEOUT_FLOOR,
           "the least seconds one mutant's run gets (default {default})", group=MUTATION_GROUP, commands=MUTATION,
           metavar="SECONDS"),
    Option("no_cache", "--no-cache", bool, False, "judge every mutant again (no verdict cache)",
           group=MUTATION_GROUP, commands=MUTATION),
    Option("cache_dir", "--cache-dir", str, None, "where verdicts are kept", group=MUTATION_GROUP, commands=MUTATION,
           metavar="DIR"),
    Option("fail_under", "--fail-under", float, None, "exit 1 when the mutation score (percent) is below SCORE",
           group=MUTATION_GROUP, commands=MUTATION, metavar="SCORE"),
    Option("list", "--list", bool, False, "list the mutants and exit", group=MUTATION_GROUP, commands=MUTATION),
    Option("show", "--show", str, None, "print one mutant's diff and exit", group=MUTATION_GROUP, commands=MUTATION,
           metavar="MUTANT"),
    # -- executor --------------------------------------------------------------------------------
    Option("jobs", "--jobs", int, None,
           "candidates graded in parallel (default 1; with --executor ray: the most tasks submitted at once, "
           "default all)", group=EXECUTOR, commands=("grade", *MUTATION), short="-j", metavar="N",
           helps={m: f"mutants at once (default: the CPU count, {os.cpu_count()})" for m in MUTATION}),
    Option("executor", "--executor", str, "local",
           "local: a pool of drivers on this machine (default); ray: each candidate a task of a Ray cluster needing "
           "one GPU (--device cuda) or one CPU", group=EXECUTOR, commands=("grade",), choices=("local", "ray")),
    Option("ray_address", "--ray-address", str, None,
           "the Ray cluster to use with --executor ray (e.g. auto, or ray://HEAD:10001; default: RAY_ADDRESS, else a "
           "Ray started on this machine for the run)", group=EXECUTOR, commands=("grade",), metavar="ADDRESS"),
    # -- output ----------------------------------------------------------------------------------
    Option("json", "--json", str, None, "write the result as JSON", group=OUTPUT, commands=("check",), metavar="FILE"),
    Option("markdown", "--markdown", str, None, "write a Markdown summary (e.g. for a pull-request comment)",
           group=OUTPUT, commands=("check", "grade"), metavar="FILE"),
    Option("reproducers", "--reproducers", str, defaults.REPRODUCER_DIR,
           "where failing inputs are saved (default {default})", group=OUTPUT, commands=("check",), plugin=True,
           metavar="DIR", helps={"plugin": "where reproducer files of failures are written (default {default})"}, api="reproducer_dir"),
    Option("bench", "--bench", bool, False, "on CUDA, also measure bandwidth after a pass", group=OUTPUT,
           commands=("check",)),
    Option("out_dir", "--out-dir", str, defaults.OUT_DIR,
           "where grade.jsonl, grade.csv and reproducers go (default {default}/)", group=OUTPUT,
           commands=("grade", *MUTATION), metavar="DIR",
           helps={m: "where mutation.json, mutation.md, mutation.html and reproducers go (default {default}/)"
                  for m in MUTATION}),
    Option("resume", "--resume", bool, False,
           "continue the report in --out-dir: skip candidates already graded with the same options",
           group=OUTPUT, commands=("grade",)),
    Option("overwrite", "--overwrite", bool, False, "replace an existing report in --out-dir", group=OUTPUT,
           commands=("grade",)),
    Option("no_bench", "--no-bench", bool, False, "skip the bandwidth measurement on CUDA", group=OUTPUT,
           commands=("grade",)),
    Option("quiet", "--quiet", bool, False, "no per-candidate progress lines", group=OUTPUT,
           commands=("grade", *MUTATION), short="-q", helps={m: "no progress bar" for m in MUTATION}),
    # -- the implementation (replay's --impl, the plugin's --lse-impl) ---------------------------
    Option("impl", "--impl", str, "reference:lse",
           "path/to/file.py[:func] or package.module[:func] (default reference:lse)", group=IMPL,
           commands=("replay",), plugin=True, metavar="TARGET", defaults={"plugin": None},
           helps={"plugin": "implementation under test: path/to/file.py:func or pkg.module:func; with no test paths "
                            "given, runs the shipped suite against it (default: the project's kernel, reference.lse, "
                            "for the lse_impl and lse_fuzz fixtures)"}),
    Option("isolate", "--isolate", bool, False,
           "run the implementation in a worker process (for an example that crashed or hung it)", group=IMPL,
           commands=("replay",), plugin=True,
           helps={"plugin": "run the implementation in a worker process: a crash or hang fails a test instead of "
                            "ending the pytest run"}),
    # -- the pytest plugin alone -----------------------------------------------------------------
    Option("database", "--database", str, None, "keep failing examples in this Hypothesis database directory",
           commands=(), plugin=True, metavar="DIR", api="database"),
)


def option(name: str) -> Option:
    """The option whose value lands in ``name``."""
    for entry in OPTIONS:
        if entry.name == name:
            return entry
    raise KeyError(name)


def cli_name(name: str) -> str:
    """How a user spells the option of field ``name`` on the command line (``--worker-timeout`` for ``timeout``)."""
    try:
        return option(name).flag
    except KeyError:
        return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser, command: str, *, table: Iterable[Option] | None = None) -> None:
    """Add every option ``command`` takes to ``parser``, in argument groups (:data:`GROUPS` order)."""
    chosen = [entry for entry in (OPTIONS if table is None else table) if command in entry.commands]
    for title, description in GROUPS:
        members = [entry for entry in chosen if entry.group == (title, description)]
        if not members:
            continue
        group = parser.add_argument_group(title, description)
        for entry in members:
            flags = (entry.short, entry.flag) if entry.short else (entry.flag,)
            group.add_argument(*flags, **entry.kwargs(command))


def add_plugin_options(group, *, table: Iterable[Option] | None = None) -> None:
    """Add the ``--lse-*`` options to a pytest option group (``parser.getgroup(...)``)."""
    for entry in plugin_options(table):
        kwargs = entry.kwargs("plugin")
        kwargs["dest"] = "lse_" + entry.name
        group.addoption(entry.plugin_flag, **kwargs)


def given(args: argparse.Namespace, names: Iterable[str]) -> dict[str, object]:
    """The values of ``names`` in ``args`` (absent ones left out)."""
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def plugin_options(table: Iterable[Option] | None = None) -> list[Option]:
    """The options of the pytest plugin (``--lse-NAME``)."""
    return [entry for entry in (OPTIONS if table is None else table) if entry.plugin]


def api_options(table: Iterable[Option] | None = None) -> list[Option]:
    """The options that are keywords of ``lse_fuzz.check`` (and ``lse_suite``): :attr:`Option.api`."""
    return [entry for entry in (OPTIONS if table is None else table) if entry.api]
