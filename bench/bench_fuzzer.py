"""The fuzzer's own pace: examples per second and compiled variants of check, mutants and grade.

    python bench/bench_fuzzer.py [--device cpu|cuda] [--quick] [--out PREFIX] [-j N] [--only NAMES]

Runs each scenario twice as the user would, ``python -m fuzz ...`` in a subprocess: *cold* (a new,
empty ``TRITON_CACHE_DIR`` and Hypothesis storage directory) and *warm* (again, with the cache the
cold run filled). The scenarios: ``check`` of one correct Triton kernel from the corpus
(``two_pass.py``), of ``reference:lse`` and of a torch wrapper (``torch_float32.py``); ``mutants``,
the bundled mutation analysis; ``grade`` of four correct corpus files. For each run it reports:

* examples run (from the command's own report: ``--json``, ``mutation.json``, ``grade.jsonl``),
  wall time, examples per second, the exit code and the load average before the run;
* **variants**: the distinct specialization keys of every kernel launch in every worker
  (:mod:`fuzz.interpreter.specialization`: constexpr values, per-argument dtype, integers equal to 1 or
  divisible by 16, 16-byte aligned pointers, launch options), what Triton compiles for those
  launches. Counted the same way on both devices, so a CPU run and a GPU run compare;
* **compiles**: binaries Triton really compiled, the ``__grp__*.json`` entries the run added to the
  cache (one per compiled kernel, in every Triton 3.x; 0 in the interpreter, where nothing
  compiles). On a GPU a cold run's compiles should equal its variants and a warm run's be 0.

``--survey TARGET ... [--seeds 3] [--budget N]`` instead runs ``check`` of each target once per seed (default
budget, one Triton cache per target) and reports each run's variants, the variants new to it
(not in an earlier seed's run: on a GPU, its compiles with the cache the earlier seeds filled),
the union over the seeds, and what they are made of.

Writes ``PREFIX.jsonl`` (one line per run) and ``PREFIX.md`` (date, device, versions, command,
the table and which kernel arguments the variants are made of), and prints the table. The default
PREFIX is ``bench/results/DATE-DEVICE-bench-fuzzer`` (``-variants-survey`` for a survey); of the
two, only the Markdown summary is committed (bench/results/README.md). Default
options take about 6 minutes on an idle 2-core CPU (13 when other jobs keep its load at 5);
``--quick`` (budget 20, three mutants, two graded files) about two.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz.interpreter import specialization  # after the path: this checkout's fuzz, not an installed one

CORRECT = ROOT / "tests" / "implementations" / "correct"
GRADED = ("exp2_based.py", "multi_row.py", "split_row.py", "torch_float32.py")
QUICK_MUTANTS = ("masked_lanes_zero", "hardcoded_row_stride", "one_tile_per_row")
RUN_TIMEOUT = 1800


@dataclass(frozen=True)
class Scenario:
    """One fuzzer command to time: ``argv`` after ``python -m fuzz``, with ``{work}`` standing for
    the run's own folder; ``kind`` says where its examples are counted."""

    name: str
    kind: str  # "check", "mutants" or "grade"
    argv: tuple[str, ...]

    def command(self, work: Path) -> list[str]:
        return [sys.executable, "-m", "fuzz", *(a.replace("{work}", str(work)) for a in self.argv)]


def scenarios(device: str, *, quick: bool, jobs: int | None) -> list[Scenario]:
    """The scenarios of a run: default budgets, or ``quick`` ones."""
    check_budget = ["--budget", "20"] if quick else []
    jobs_option = ["-j", str(jobs)] if jobs else []
    check = ("check", "--device", device, *check_budget, "--json", "{work}/check.json", "--reproducers", "{work}/repro")
    graded = GRADED[:2] if quick else GRADED
    mutants = ("mutants", *(QUICK_MUTANTS if quick else ()), "--device", device, *(["--budget", "100"] if quick else []),
               *jobs_option, "-q", "--out-dir", "{work}/mutants")
    grade = ("grade", *(str(CORRECT / name) for name in graded), "--device", device, *check_budget, *jobs_option,
             "--out-dir", "{work}/grade", "--overwrite", "-q", "--no-bench")
    return [
        Scenario("check two_pass", "check", (*check[:1], f"{CORRECT / 'two_pass.py'}:lse", *check[1:])),
        Scenario("check reference", "check", (*check[:1], "reference:lse", *check[1:])),
        Scenario("check torch_float32", "check", (*check[:1], f"{CORRECT / 'torch_float32.py'}:lse", *check[1:])),
        Scenario("mutants", "mutants", mutants),
        Scenario(f"grade {len(graded)} files", "grade", grade),
    ]


def examples_of(kind: str, work: Path) -> int | None:
    """Examples a finished run reports (None when its report is missing)."""
    try:
        if kind == "check":
            return int(json.loads((work / "check.json").read_text())["examples"] or 0)
        if kind == "mutants":
            config = json.loads((work / "mutants" / "mutation.json").read_text())["config"]
            return sum(int(g["examples"] or 0) for g in config["gate"]) + \
                sum(int(m["examples"] or 0) for m in config["mutants"].values())
        if kind == "grade":
            lines = (work / "grade" / "grade.jsonl").read_text().splitlines()
            return sum(int(json.loads(line).get("examples") or 0) for line in lines if line.strip())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    raise ValueError(f"kind={kind!r}; expected 'check', 'mutants' or 'grade'")


def count_compiles(cache_dir: Path) -> int:
    """Kernels compiled into a Triton cache: its ``__grp__*.json`` files, one per compiled binary
    (the group file naming the binary's stages; launcher stubs and other entries have none)."""
    return sum(1 for _ in Path(cache_dir).rglob("__grp__*.json")) if Path(cache_dir).is_dir() else 0


@dataclass
class Run:
    scenario: str
    cache: str  # "cold" or "warm"
    command: str
    returncode: int
    wall_s: float
    examples: int | None
    variants: int
    kernels: int
    compiles: int
    load_before: float
    count_errors: int = 0
    new_variants: int | None = None  # a survey's: variants no earlier seed's run had
    classes: dict = field(default_factory=dict)
    drivers: dict = field(default_factory=dict)

    @property
    def examples_per_s(self) -> float | None:
        return None if not self.examples or not self.wall_s else self.examples / self.wall_s

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items()}
        out["wall_s"] = round(self.wall_s, 2)
        out["examples_per_s"] = None if self.examples_per_s is None else round(self.examples_per_s, 2)
        return out


def run_once(scenario: Scenario, cache: str, cache_dir: Path, work: Path, env: dict[str, str]) -> Run:
    """Run one scenario in ``work`` with the Triton cache ``cache_dir``; count what it did."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    variants_file = work / "variants.jsonl"
    env = {**env, "TRITON_CACHE_DIR": str(cache_dir), specialization.ENV: str(variants_file),
           "HYPOTHESIS_STORAGE_DIRECTORY": str(work / "hypothesis")}
    command = scenario.command(work)
    before = count_compiles(cache_dir)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=RUN_TIMEOUT)
    wall = time.perf_counter() - start
    (work / "output.log").write_text(proc.stdout)
    summary = specialization.summarize(specialization.read_records(variants_file))
    shown = " ".join(Path(a).name if os.sep in a and not a.startswith("{") else a for a in scenario.argv)
    return Run(scenario=scenario.name, cache=cache, command=f"python -m fuzz {shown}", returncode=proc.returncode,
               wall_s=wall, examples=examples_of(scenario.kind, work), variants=summary["variants"],
               kernels=summary["kernels"], compiles=count_compiles(cache_dir) - before, load_before=load,
               count_errors=summary["errors"], classes=summary["classes"], drivers=summary["drivers"])


def benchmark(chosen: list[Scenario], work: Path, env: dict[str, str]) -> Iterator[Run]:
    """Each scenario cold, then warm, in a Triton cache of its own."""
    for index, scenario in enumerate(chosen):
        cache_dir = work / f"triton-cache-{index}"  # new for the cold run, kept for the warm one
        for cache in ("cold", "warm"):
            yield run_once(scenario, cache, cache_dir, work / f"{index}-{cache}", env)


def survey(targets: list[str], seeds: int, device: str, work: Path, env: dict[str, str], *,
           budget: int | None = None) -> Iterator[Run]:
    """``check`` of each target with seeds 0..seeds-1, in one Triton cache per target; after each
    target's runs, a row for their union (cache ``union``)."""
    runs: list[Run] = []
    for index, target in enumerate(targets):
        path, colon, function = target.partition(":")
        if path.endswith(".py"):  # the runs work in folders of their own
            target = f"{Path(path).resolve()}{colon}{function}"
        label = Path(path).stem if path.endswith(".py") else target  # two_pass, reference:lse
        seen: set = set()
        for seed in range(seeds):
            scenario = Scenario(f"{label} seed {seed}", "check",
                                ("check", target, "--device", device, "--seed", str(seed),
                                 *(["--budget", str(budget)] if budget else []), "--json", "{work}/check.json",
                                 "--reproducers", "{work}/repro"))
            folder = work / f"survey-{index}-{seed}"
            run = run_once(scenario, "cold" if seed == 0 else "warm", work / f"survey-cache-{index}", folder, env)
            keys = {(r["kernel"], json.dumps(r["key"], sort_keys=True))
                    for r in specialization.read_records(folder / "variants.jsonl") if "key" in r}
            run.new_variants = len(keys - seen)
            seen |= keys
            runs.append(run)
            yield run
        union = Run(scenario=f"{label} seeds 0-{seeds - 1}", cache="union", command="",
                    returncode=max(r.returncode for r in runs[-seeds:]), wall_s=sum(r.wall_s for r in runs[-seeds:]),
                    examples=sum(r.examples or 0 for r in runs[-seeds:]), variants=len(seen), kernels=0,
                    compiles=sum(r.compiles for r in runs[-seeds:]), load_before=runs[-seeds].load_before)
        yield union


# --------------------------------------------------------------------------------------------
# Reports


COLUMNS = ("scenario", "cache", "wall s", "examples", "examples/s", "variants", "new", "compiles", "exit", "load")


def row(run: Run) -> list[str]:
    rate = run.examples_per_s
    return [run.scenario, run.cache, f"{run.wall_s:.1f}", "?" if run.examples is None else str(run.examples),
            "?" if rate is None else f"{rate:.1f}", str(run.variants),
            "" if run.new_variants is None else str(run.new_variants), str(run.compiles), str(run.returncode),
            f"{run.load_before:.2f}"]


def classes_lines(runs: list[Run]) -> list[str]:
    """Per scenario (cold runs), which kernel arguments took more than one class: what the
    variants are made of."""
    lines = []
    for run in runs:
        if run.cache == "warm" or not run.classes:
            continue
        alone = ", ".join(f"{group} alone {n}" for group, n in run.drivers.items())
        lines.append(f"* {run.scenario}: {run.variants} variants; {alone}")
        for kernel, params in sorted(run.classes.items()):
            varied = "; ".join(f"`{name}` {len(values)}: {', '.join(values)}" for name, values in params.items())
            lines.append(f"  * `{kernel}`: {varied or 'one variant'}")
    return lines


def render_markdown(header: str, command: str, runs: list[Run]) -> str:
    lines = [f"# Benchmark of the fuzzer ({header})", "", f"`{command}`", "",
             "Cold: a new Triton cache and Hypothesis storage; warm: the same command again with the cache "
             "the cold run filled. Variants: distinct specialization keys of the kernel launches "
             "(`fuzz.interpreter.specialization`); new (surveys): variants no earlier seed's run had; compiles: kernels "
             "compiled into the Triton cache (0 in the interpreter). Load: the 1-minute load average before "
             "the run.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row(run)) + " |" for run in runs]
    lines += ["", "Commands (run in a folder of their own, `{work}`):", ""]
    lines += [f"* {run.scenario}: `{run.command}`" for run in runs
              if run.command and (run.cache != "warm" or run.new_variants is not None)]
    extra = classes_lines(runs)
    if extra:
        lines += ["", "What the variants of the cold runs are made of: the distinct keys if only one group of "
                  "arguments split (`fuzz.interpreter.specialization.drivers`), and every argument with more than one class "
                  "(`1`: an integer equal to 1; `/D`: divisible by 16, or a 16-byte aligned pointer):", ""] + extra
    return "\n".join(lines) + "\n"


def print_table(header: str, runs: list[Run]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"lse-fuzz benchmark: {header}")
    for name in COLUMNS:
        table.add_column(name, justify="left" if name in ("scenario", "cache") else "right", no_wrap=True)
    for run in runs:
        table.add_row(*row(run))
    console = Console()
    console.width = max(console.width, 110)  # a log file or a narrow terminal still gets whole rows
    console.print(table)


def _slug(device: str) -> str:
    if not device.startswith("cuda"):
        return "cpu"
    import torch

    return torch.cuda.get_device_name().split()[-1].lower()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (CUDA when present, default)")
    parser.add_argument("--quick", action="store_true", help="small budgets, three mutants, two graded files")
    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help="workers of mutants and grade (default: theirs, from the machine)")
    parser.add_argument("--only", default=None, metavar="NAMES",
                        help="comma-separated scenario prefixes to run (check, mutants, grade; default all)")
    parser.add_argument("--out", type=Path, default=None, metavar="PREFIX",
                        help="write PREFIX.jsonl and PREFIX.md (default bench/results/DATE-DEVICE-bench-fuzzer)")
    parser.add_argument("--work", type=Path, default=None, help="where the runs' folders go (default: a temporary one)")
    parser.add_argument("--survey", nargs="+", metavar="TARGET", default=None,
                        help="instead: check each TARGET with --seeds seeds and report the variants of each run")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per target of --survey (default 3)")
    parser.add_argument("--budget", type=int, default=None, help="examples per check of --survey (default: check's)")
    args = parser.parse_args(argv)

    from bench._common import run_header
    from fuzz.validate import device as parse_device
    from reference.errors import InvalidArgument

    try:
        device = str(parse_device(args.device))
    except InvalidArgument as exc:
        parser.error(str(exc))
    import hypothesis

    header = f"{run_header(device)}, hypothesis {hypothesis.__version__}"
    command = "python bench/bench_fuzzer.py " + " ".join(sys.argv[1:] if argv is None else argv)
    what = "variants-survey" if args.survey else "bench-fuzzer"
    out = args.out or ROOT / "bench" / "results" / f"{datetime.date.today().isoformat()}-{_slug(device)}-{what}"
    device_option = "cuda" if device.startswith("cuda") else "cpu"
    chosen = scenarios(device_option, quick=args.quick, jobs=args.jobs)
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        chosen = [s for s in chosen if any(s.name.startswith(w) for w in wanted)]
        if not chosen:
            parser.error(f"--only={args.only!r} matches no scenario")
    work = args.work or Path(tempfile.mkdtemp(prefix="lse-bench-fuzzer-"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    env["PYTHONUNBUFFERED"] = "1"
    print(f"# {header}\n# {command}\n# started {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}, "
          f"runs in {work}", flush=True)
    runs: list[Run] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    jsonl = out.with_name(out.name + ".jsonl")
    jsonl.write_text("")
    runs_of = (survey(args.survey, args.seeds, device_option, work, env, budget=args.budget) if args.survey
               else benchmark(chosen, work, env))
    for run in runs_of:
        runs.append(run)
        print("  ".join(f"{c}={v}" for c, v in zip(COLUMNS, row(run))), flush=True)
        with open(jsonl, "a", encoding="utf-8") as f:
            f.write(json.dumps({"header": header, "command": command, **run.to_dict()}, sort_keys=True) + "\n")
        # After every run, so a run stopped by a time limit still leaves the table of what finished.
        out.with_name(out.name + ".md").write_text(render_markdown(header, command, runs))
    print_table(header, runs)
    print(f"wrote {jsonl} and {out.with_name(out.name + '.md')}")
    return 0 if all(run.returncode == 0 and not run.count_errors for run in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
