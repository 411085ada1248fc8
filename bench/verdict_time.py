"""Time to a verdict: ``lse-fuzz check`` of every planted implementation, the mutation runs, cold.

    python bench/verdict_time.py [--device cpu|cuda] [--sections checks,alone,mutants,mutate]
                                 [--set corpus|all] [--only NAMES] [--jobs N] [--alone K] [--deadline S]
                                 [--check-options OPTIONS] [--memory] [--out PREFIX]

Every run is a subprocess as a user types it, with an empty Triton cache of its own (cold):

* ``checks``: ``lse-fuzz check TARGET --json`` of each target of the set, ``--jobs`` at once
  (default 1 on the CPU, 8 on a GPU: the grading load a batch puts on a 16-CPU host). ``corpus`` is
  the correct implementations of ``tests/implementations/correct`` (their ``contracts.json``
  declarations applied); ``all`` adds the buggy and hostile candidates of
  ``tests/implementations/candidates`` (but those made to hang or to be slow), the autotuned kernels
  of ``tests/implementations/tuned`` and every bundled mutant as a target (``mutants.patched:NAME``).
  For each: the verdict, the wall time, and the run's cost counters from its report (examples,
  specializations launched, compiles, shrink steps, whether shrinking stopped at its budget).
* ``alone``: the ``--alone`` slowest targets of ``checks`` again, one at a time (without ``checks``:
  every target of the set, or of ``--only``, one at a time).
* ``mutants``: ``lse-fuzz mutants`` (``-j`` as ``--jobs``); ``mutate``: ``lse-fuzz mutate reference:lse``.

``--memory`` samples the GPU's memory once a second while the checks run
(:mod:`bench.gpu_memory_sampler`): the peak, and the largest process of each kind, in the report.

Prints one table per section and a summary (median, slowest, and the targets of :data:`TARGETS`
met or missed), and writes ``PREFIX.md`` (date, device,
versions, command, the tables) and ``PREFIX.jsonl`` (one line per run). ``--deadline`` starts no
run after that many seconds and reports what finished (default 500: one command of a lent GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
IMPLEMENTATIONS = ROOT / "tests" / "implementations"

SLOW_ON_PURPOSE = {"hang.py", "slow_but_correct.py", "slow_fifth_call.py", "hangs_on_import.py",
                   "memory_hog.py", "prints_past_the_file_limit.py"}
"""Candidates made to hang, sleep or exhaust a limit: their verdict's time is their timeout's."""
TARGETS = {("cpu", "alone"): (15.0, 60.0), ("cpu", "at once"): (15.0, 60.0),
           ("cuda", "alone"): (None, 30.0), ("cuda", "at once"): (45.0, None),
           ("cpu", "mutants"): (None, 60.0), ("cuda", "mutants"): (None, 30.0),
           ("cpu", "mutate"): (None, 240.0), ("cuda", "mutate"): (None, 600.0)}
"""(median, slowest) seconds a section's runs may take, None where there is no target: on the CPU a
check's median and bound; on a GPU every check alone within 30 s and, 8 at once, a median of 45 s."""


@dataclass
class Run:
    section: str
    target: str
    seconds: float
    exit: int
    verdict: str = ""
    check: str | None = None
    examples: int | None = None
    costs: dict = field(default_factory=dict)
    parts: list = field(default_factory=list)  # each part's seconds, in part order
    part_compiles: list = field(default_factory=list)  # and each part's compiles (which part paid for the shared ones)
    part_ended: list = field(default_factory=list)  # and when each ended, from the parts' start (side by side)
    reason: str = ""  # the report's reason, for a verdict other than pass and fail (the harness's own errors)
    details: str = ""  # and the end of its details (a traceback, a worker's stderr)
    memory: dict = field(default_factory=dict)  # the GPU's memory phase: seconds, waited (after the fuzzing), notes

    @property
    def triton(self) -> bool:
        """Whether the target launched a Triton kernel (the CPU's median target is about those)."""
        return bool(self.costs.get("specializations"))

    def row(self) -> list[str]:
        costs = self.costs
        shrink = str(costs.get("shrink_steps", "")) + (" (stopped)" if costs.get("shrink_stopped") else "")
        return [self.target, f"{self.verdict}{f' {self.check}' if self.check else ''}", f"{self.seconds:.1f}",
                str(self.examples if self.examples is not None else ""), str(costs.get("specializations", "")),
                str(costs.get("compiles", "")), shrink]


def _declared(path: Path) -> list[str]:
    """The command-line options of what ``contracts.json`` beside ``path`` declares for it."""
    table = path.parent / "contracts.json"
    entry = json.loads(table.read_text()).get(path.name, {}) if table.is_file() else {}
    args = []
    for name, value in entry.items():
        if name == "why":
            continue
        flag = "--" + name.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


def targets(which: str) -> list[tuple[str, list[str]]]:
    """(TARGET, declared options) of the set ``which``."""
    chosen = [(str(path), _declared(path)) for path in sorted((IMPLEMENTATIONS / "correct").glob("*.py"))]
    if which == "all":
        chosen += [(str(path), []) for path in sorted((IMPLEMENTATIONS / "candidates").glob("*.py"))
                   if path.name not in SLOW_ON_PURPOSE]
        # The autotuned kernels import a sibling module: they load as modules of the package ``tuned``.
        chosen += [(f"tuned.{path.stem}:lse", []) for path in sorted((IMPLEMENTATIONS / "tuned").glob("*.py"))
                   if not path.name.startswith("_")]
        from mutants import NAMES

        chosen += [(f"mutants.patched:{name}", []) for name in NAMES]
    return chosen


def _environment(cache: str) -> dict[str, str]:
    """Cold: an empty Triton cache, and an empty lse-fuzz cache (the mutation runs' verdicts and files)."""
    return {**os.environ, "TRITON_CACHE_DIR": cache, "LSE_FUZZ_CACHE": cache + "-lse-fuzz",
            # The caller's PYTHONPATH stays after ours: libraries installed to a folder of their own.
            "PYTHONPATH": ":".join(filter(None, (str(ROOT), str(IMPLEMENTATIONS), os.environ.get("PYTHONPATH")))),
            "PYTHONUNBUFFERED": "1"}


def run_check(target: str, declared: list[str], device: str, section: str, timeout: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="lse-verdict-") as scratch:
        report = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "lse_fuzz", "check", target, "--device", device, "--json", str(report),
                   "--reproducers", str(Path(scratch) / "repro"), *declared]
        started = time.monotonic()
        try:
            done = subprocess.run(command, cwd=scratch, env=_environment(str(Path(scratch) / "triton")),
                                  capture_output=True, text=True, timeout=timeout)
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = -1
        seconds = time.monotonic() - started
        label = target.replace(str(IMPLEMENTATIONS) + "/", "")
        if not report.is_file():  # a usage error or a load error: what the command said last
            said = (done.stderr.strip().splitlines() or [""])[-1][:120] if code != -1 else ""
            return Run(section, label, seconds, code,
                       verdict=f"exit {code}: {said}" if code != -1 else f"> {timeout:g} s")
        data = json.loads(report.read_text())
        verdict = data.get("verdict", "")
        return Run(section, label, seconds, code, verdict, data.get("check"), data.get("examples"),
                   data.get("costs") or {}, [part.get("seconds") for part in data.get("parts") or []],
                   [part.get("compiles") for part in data.get("parts") or []],
                   [part.get("ended") for part in data.get("parts") or []],
                   memory={k: v for k, v in (data.get("memory") or {}).items() if k in ("seconds", "waited", "notes")},
                   **({} if verdict in ("pass", "fail") else
                      {"reason": str(data.get("reason") or ""), "details": str(data.get("details") or "")[-3000:]}))


def run_command(section: str, label: str, argv: list[str], timeout: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="lse-verdict-") as scratch:
        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-m", "lse_fuzz", *argv, "--out-dir", str(Path(scratch) / "out")],
                                  cwd=scratch, env=_environment(str(Path(scratch) / "triton")),
                                  capture_output=True, text=True, timeout=timeout)
            code, said = done.returncode, (done.stderr.strip().splitlines() or [""])[-1]
        except subprocess.TimeoutExpired:
            code, said = -1, ""
        seconds = time.monotonic() - started
        report = Path(scratch) / "out" / "mutation.json"
        verdict = "timeout" if code == -1 else f"exit {code}"
        if report.is_file():
            files = json.loads(report.read_text()).get("files", {})
            mutants = [m for f in files.values() for m in f.get("mutants", [])]
            killed = sum(m.get("status") == "Killed" for m in mutants)
            verdict += f", {killed} of {len(mutants)} killed"
            # A run that kills fewer names each other mutant and why, so a flaky run explains itself.
            verdict += "".join(f"; {m.get('id')} {m.get('status')}: {' '.join(str(m.get('statusReason', '')).split())}"[:300]
                               .replace("|", "/")  # one line of a Markdown table cell
                               for m in mutants if m.get("status") != "Killed")
        elif said:
            verdict += f": {said}"
        return Run(section, label, seconds, code, verdict)


def table(runs: list[Run]) -> str:
    head = ["target", "verdict", "s", "examples", "specializations", "compiles", "shrink steps"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(run.row()) + " |" for run in runs]
    return "\n".join(lines)


def summary(runs: list[Run], device: str) -> str:
    if not runs:
        return "no runs"
    section = runs[0].section
    kind = section if section in ("mutants", "mutate") else "at once" if " -j " in section and \
        not section.endswith(" -j 1") else "alone"
    median_target, bound = TARGETS["cpu" if device == "cpu" else "cuda", kind]
    times = [run.seconds for run in runs]
    median = statistics.median(times)
    slowest = max(runs, key=lambda r: r.seconds)
    text = (f"{len(runs)} runs: median {median:.1f} s"
            + (f" (target {median_target:g}: {'met' if median <= median_target else 'missed'})" if median_target else "")
            + f", slowest {slowest.seconds:.1f} s ({slowest.target})")
    kernels = [run.seconds for run in runs if run.triton]
    if device == "cpu" and kind == "alone" and 0 < len(kernels) < len(runs):
        # The target is the Triton kernels' median: the others are torch and scipy, in seconds.
        kernel_median = statistics.median(kernels)
        text += (f"; the {len(kernels)} Triton kernels: median {kernel_median:.1f} s"
                 + (f" (target {median_target:g}: {'met' if kernel_median <= median_target else 'missed'})"
                    if median_target else ""))
    if bound is not None:
        over = [run for run in runs if run.seconds > bound]
        text += f"; {len(over)} over {bound:g} s" + (": " + ", ".join(f"{r.target} {r.seconds:.0f} s" for r in over)
                                                     if over else "")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if _has_cuda() else "cpu")
    parser.add_argument("--sections", default="checks,alone,mutants")
    parser.add_argument("--set", dest="which", choices=("corpus", "all"), default="all")
    parser.add_argument("--only", default=None, metavar="NAMES",
                        help="comma-separated parts of target names: only the targets of the set that contain one")
    parser.add_argument("--jobs", type=int, default=None, help="checks at once (default 1 on the CPU, 8 on a GPU)")
    parser.add_argument("--alone", type=int, default=6, help="the slowest checks run again one at a time")
    parser.add_argument("--deadline", type=float, default=500.0, help="start no run after S seconds")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    parser.add_argument("--check-options", default="", metavar="OPTIONS",
                        help="more options for every check, e.g. '--parts 1' (one string, split as a shell does)")
    parser.add_argument("--memory", action="store_true", help="sample the GPU's memory while the checks run")
    parser.add_argument("--out", default=None, help="PREFIX of the .md and .jsonl written")
    args = parser.parse_args(argv)
    device = args.device
    jobs = args.jobs or (1 if device == "cpu" else 8)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    only = [name.strip() for name in (args.only or "").split(",") if name.strip()]
    extra = shlex.split(args.check_options)
    chosen = [(target, [*declared, *extra]) for target, declared in targets(args.which)
              if not only or any(name in target for name in only)]
    from bench._common import run_header

    header = run_header(device)
    began = time.monotonic()
    left = lambda: args.deadline - (time.monotonic() - began)  # noqa: E731
    runs: list[Run] = []
    print(f"# {header}\n# {' '.join(map(shlex.quote, ['python', 'bench/verdict_time.py', *(argv or sys.argv[1:])]))}",
          flush=True)

    def timed(target: tuple[str, list[str]], section: str) -> Run | None:
        if left() <= 0:
            return None
        run = run_check(*target, device, section, args.timeout)
        waited = run.memory.get("waited")
        print(f"{section}: {run.target}: {run.verdict} {run.check or ''} in {run.seconds:.1f} s"
              + (f", {waited:.1f} s of it waiting for the memory phase" if isinstance(waited, (int, float)) else "")
              + (f" ({run.reason})" if run.reason else ""), flush=True)
        return run

    from bench.gpu_memory_sampler import GpuMemorySampler

    sampler = GpuMemorySampler().start() if args.memory else None
    alone = chosen  # without the checks section: every chosen target, one at a time
    if "checks" in sections:
        with ThreadPoolExecutor(jobs) as pool:
            checked = [run for run in pool.map(lambda t: timed(t, f"checks -j {jobs}"), chosen) if run]
        runs += checked
        again = {run.target for run in sorted(checked, key=lambda run: -run.seconds)[:args.alone]}
        alone = [t for t in chosen if t[0].replace(str(IMPLEMENTATIONS) + "/", "") in again]
    if "alone" in sections:
        runs += [run for t in alone if (run := timed(t, "alone"))]
    if sampler is not None:
        sampler.stop()
    for section, argv_ in (("mutants", ["mutants", "--device", device, "-j", str(jobs), "-q"]),
                           ("mutate", ["mutate", "reference:lse", "--device", device, "-j", str(jobs), "-q"])):
        if section in sections and left() > 0:
            run = run_command(section, " ".join(argv_[:2]), argv_, args.timeout * 4)
            print(f"{section}: {run.verdict} in {run.seconds:.1f} s", flush=True)
            runs.append(run)

    text = [f"# Time to a verdict ({device})", "", f"{header}", "",
            f"`python bench/verdict_time.py {' '.join(argv or sys.argv[1:])}`", ""]
    for section in dict.fromkeys(run.section for run in runs):
        chosen = [run for run in runs if run.section == section]
        text += [f"## {section}", "", table(chosen), "", summary(chosen, device), ""]
    if sampler is not None:
        text += [f"{sampler.summary()} (the checks' sections)", ""]
    report = "\n".join(text)
    print(report)
    if args.out:
        Path(f"{args.out}.md").write_text(report)
        Path(f"{args.out}.jsonl").write_text("".join(json.dumps(asdict(run)) + "\n" for run in runs))
    return 0


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
