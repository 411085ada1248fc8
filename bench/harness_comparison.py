"""lse-fuzz beside the correctness checks people use today, on the same implementations.

    python bench/harness_comparison.py --out comparison.md [--json comparison.json]
        [--groups correct,mutants,real-world] [--only NAME ...] [--baselines kernelbench,opinfo,...]
        [--lse-fuzz run|skip] [--timeout S]

Judges each implementation with each baseline of ``bench/_baselines.py`` (KernelBench's check,
torch.testing.assert_close on OpInfo's logsumexp samples, Liger-Kernel's and flash-linear-attention's
cross-entropy test recipes) and with ``lse-fuzz check`` (``python -m fuzz check TARGET --device cpu``
with default options and the contract the implementation declares), and writes a Markdown table:
how many bugs each harness catches and how many false alarms it raises, per group:

* ``correct``: the correct corpus ``tests/implementations/correct/*.py`` (the 2-D ones; the nd_*
  members are called another way). Any rejection there is a false alarm.
* ``mutants``: the bundled mutants (``mutants.NAMES``, loaded as ``mutants.patched:<name>``): each
  plants one bug, so a rejection is a bug caught and a pass a bug missed.
* ``real-world``: the adapters of ``examples/real_world/`` whose command in its README runs on a CPU,
  with that command's contract; their known bugs are those of ``docs/bugs-found.md``. An adapter
  whose library is not installed is skipped and says so.

Each implementation runs in a worker process of its own (this script with ``--worker``), so a crash
or a hang costs one verdict, not the run: a baseline whose call kills the worker is an ERROR (a
rejection, as every baseline counts an exception), one that runs past ``--timeout`` is not judged.
On a machine without CUDA, Triton's interpreter runs the kernels (``TRITON_INTERPRET=1`` is set
before Triton is imported), with the project's interpreter repairs (bfloat16 on values, autotuned
kernels running their first config), the same for every harness.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._baselines import BASELINES, DTYPES, KERNELBENCH_SHAPE, Outcome, Verdict  # noqa: E402
from mutants import NAMES as MUTANT_NAMES, UNMUTATED_TARGET  # noqa: E402  (data only: no kernel, no Triton)

CORRECT = ROOT / "tests" / "implementations" / "correct"
REAL_WORLD = ROOT / "examples" / "real_world"
GROUPS = ("correct", "mutants", "real-world")
UNMUTATED = "unmutated_reference"
LSE_FUZZ = "lse-fuzz"
HARNESSES = (*BASELINES, LSE_FUZZ)

# Known bugs of docs/bugs-found.md each adapter can show (a bug the adapter answers itself, so that
# the fuzzer looks past it, is listed apart: no harness sees it through the adapter).
KNOWN_BUGS = {
    "torch_logsumexp": ("1",),
    "torch_compile_logsumexp": (),
    "liger_cross_entropy": ("2",),
    "fla_logsumexp": ("4", "5"),
    "fla_cross_entropy": ("6",),
    "te_cross_entropy": ("9", "10"),
    "flash_attn_cross_entropy": ("12",),
    "unsloth_cross_entropy": (),
}
GUARDED_BUGS = {"liger_cross_entropy": ("3",), "fla_logsumexp": ("7",), "flash_attn_cross_entropy": ("11",)}
# The package each adapter needs installed: looked up, not imported (TransformerEngine's and
# flash-attn's packages do not import without their CUDA parts; their adapters import one file).
LIBRARY = {"liger_cross_entropy": "liger_kernel", "fla_logsumexp": "fla", "fla_cross_entropy": "fla",
           "te_cross_entropy": "transformer_engine", "flash_attn_cross_entropy": "flash_attn",
           "unsloth_cross_entropy": "unsloth"}


@dataclass(frozen=True)
class Implementation:
    group: str
    name: str
    target: str
    fuzz_options: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = tuple(DTYPES)
    known_bugs: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.group}/{self.name}"


def _correct_corpus() -> list[Implementation]:
    contracts = json.loads((CORRECT / "contracts.json").read_text())
    found = []
    for path in sorted(CORRECT.glob("*.py")):
        declared = contracts.get(path.name, {})
        if "ndim" in declared:  # an N-D call: the baselines call lse(x) on 2-D rows
            continue
        options = ("--max-n", str(declared["max_n"])) if "max_n" in declared else ()
        found.append(Implementation("correct", path.stem, f"{path.relative_to(ROOT)}:lse", options))
    # The mutants' base, loaded as they are: the gate of their scores (see summary_lines).
    return [*found, Implementation("correct", UNMUTATED, UNMUTATED_TARGET)]


def _mutants() -> list[Implementation]:
    return [Implementation("mutants", name, f"mutants.patched:{name}") for name in MUTANT_NAMES]


def _real_world() -> list[Implementation]:
    """The README's adapters whose command runs on a CPU, with that command's options."""
    found = []
    for line in (REAL_WORLD / "README.md").read_text().splitlines():
        match = re.search(r"`lse-fuzz check (examples/real_world/(\w+)\.py:lse) ([^`]*)`", line)
        if not match or "--device cpu" not in match.group(3):
            continue
        options = tuple(match.group(3).replace("--device cpu", "").split())
        dtypes = tuple(DTYPES)
        if "--dtypes" in options:
            dtypes = tuple(options[options.index("--dtypes") + 1].split(","))
        name = match.group(2)
        found.append(Implementation("real-world", name, match.group(1), options, dtypes, KNOWN_BUGS.get(name, ())))
    return found


def implementations(groups=GROUPS, only=()) -> list[Implementation]:
    every = {"correct": _correct_corpus, "mutants": _mutants, "real-world": _real_world}
    chosen = [impl for group in groups for impl in every[group]()]
    if only:
        chosen = [impl for impl in chosen if impl.name in only or impl.key in only]
        missing = set(only) - {impl.name for impl in chosen} - {impl.key for impl in chosen}
        if missing:
            raise SystemExit(f"--only {' '.join(sorted(missing))}: no such implementation in groups "
                             f"{', '.join(groups)}")
    return chosen


# --- the worker: one implementation, the baselines in order, one JSON line each -----------------------


def _worker(key: str, baselines: list[str], kernelbench_shape: tuple[int, int]) -> None:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported anywhere
    impl = next(i for i in implementations() if i.key == key)
    library = LIBRARY.get(impl.name)
    if library and importlib.util.find_spec(library) is None:
        for name in baselines:
            print(json.dumps({"baseline": name, **Outcome(Verdict.SKIP, f"{library} is not installed").as_json(),
                              "seconds": 0.0}), flush=True)
        return
    import lse_fuzz
    from fuzz.interpreter import autotune

    autotune.install()  # an autotuned kernel runs its first config in the interpreter, as under lse-fuzz
    try:
        lse = lse_fuzz.load_target(impl.target)
    except lse_fuzz.InvalidArgument as error:  # a missing dependency, say: no verdict on the implementation
        for name in baselines:
            print(json.dumps({"baseline": name, **Outcome(Verdict.SKIP, f"not loadable: {error}").as_json(),
                              "seconds": 0.0}), flush=True)
        return
    for name in baselines:
        start = time.monotonic()
        options = {"shape": kernelbench_shape} if name == "kernelbench" else {}
        outcome = BASELINES[name](lse, impl.dtypes, **options)
        print(json.dumps({"baseline": name, **outcome.as_json(), "seconds": round(time.monotonic() - start, 2)}),
              flush=True)


# --- the parent: workers, lse-fuzz, the table ---------------------------------------------------------


@dataclass
class Row:
    impl: Implementation
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _run_baselines(impl: Implementation, baselines: list[str], shape: tuple[int, int], timeout: float,
                   row: Row) -> None:
    remaining = list(baselines)
    while remaining:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", impl.key,
                   "--baselines", ",".join(remaining), "--kernelbench-shape", f"{shape[0]}x{shape[1]}"]
        start = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
            stdout, died = done.stdout, done.returncode != 0
            ending = f"the worker exited with {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
        except subprocess.TimeoutExpired as expired:
            output = expired.stdout or ""
            stdout, died = output.decode() if isinstance(output, bytes) else output, True
            ending = None
        for line in stdout.splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                row.outcomes[record["baseline"]] = Outcome(Verdict(record["verdict"]), record["reason"])
                row.seconds[record["baseline"]] = record["seconds"]
                remaining.remove(record["baseline"])
        if remaining and died:
            name = remaining.pop(0)
            row.seconds[name] = round(time.monotonic() - start, 1)
            if ending is None:
                row.outcomes[name] = Outcome(Verdict.SKIP, f"not judged: over the {timeout:.0f} s limit")
            else:  # the implementation took the process down under this baseline: a rejection
                row.outcomes[name] = Outcome(Verdict.ERROR, ending[:300])
        elif remaining:
            raise RuntimeError(f"{impl.key}: the worker ended without judging {remaining}")


def _run_lse_fuzz(impl: Implementation, timeout: float, row: Row) -> None:
    """``lse-fuzz check`` with default options and the implementation's declared contract, isolated."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "check.json"
        command = [sys.executable, "-m", "fuzz", "check", impl.target, "--device", "cpu", *impl.fuzz_options,
                   "--json", str(report)]
        start = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        except subprocess.TimeoutExpired:
            row.outcomes[LSE_FUZZ] = Outcome(Verdict.SKIP, f"not judged: over the {timeout:.0f} s limit")
            return
        row.seconds[LSE_FUZZ] = round(time.monotonic() - start, 1)
        if done.returncode not in (0, 1) or not report.exists():
            last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
            row.outcomes[LSE_FUZZ] = Outcome(Verdict.SKIP, f"no verdict (exit {done.returncode}): {last}")
            return
        record = json.loads(report.read_text())
    if record["verdict"] == "pass":
        row.outcomes[LSE_FUZZ] = Outcome(Verdict.PASS, f"{record['examples']} examples")
    else:
        check = f"check '{record['check']}'" if record.get("check") else record["verdict"]
        reason = f"{check} after {record['examples']} examples: {(record.get('details') or record.get('reason') or '')}"
        row.outcomes[LSE_FUZZ] = Outcome(Verdict.FAIL, " ".join(reason.split())[:400])


def run(impls: list[Implementation], baselines: list[str], with_lse_fuzz: bool, shape, timeout: float,
        log=print, done=lambda rows: None) -> list[Row]:
    """Judge each implementation in turn; ``done(rows)`` after each one (the tables so far are written)."""
    rows = []
    for index, impl in enumerate(impls, 1):
        row = Row(impl)
        if baselines:
            _run_baselines(impl, baselines, shape, timeout, row)
        if with_lse_fuzz:
            _run_lse_fuzz(impl, timeout, row)
        rows.append(row)
        verdicts = ", ".join(f"{name} {outcome.verdict.value}" for name, outcome in row.outcomes.items())
        log(f"[{index}/{len(impls)}] {impl.key}: {verdicts}")
        done(rows)
    return rows


def _gate(rows: list[Row]) -> Row | None:
    return next((row for row in rows if row.impl.key == f"correct/{UNMUTATED}"), None)


def _as_unmutated(row: Row, harness: str, gate: Row | None) -> bool:
    """A mutant rejected exactly as its unmutated base is (same verdict, same reason): the harness
    rejects the base, not the bug, so this is no catch (mutation testing's gate)."""
    outcome, control = row.outcomes.get(harness), gate.outcomes.get(harness) if gate else None
    return bool(outcome and control and outcome.verdict.flags and (control.verdict, control.reason) ==
                (outcome.verdict, outcome.reason))


def summary_lines(rows: list[Row], harnesses: list[str]) -> list[str]:
    """One line per group: false alarms on the correct corpus, bugs caught among the mutants (a rejection
    the unmutated base gets too is not a catch), adapters with a known bug that were rejected (and
    rejections of adapters with none)."""
    gate = _gate(rows)
    lines = ["| group | what counts | " + " | ".join(harnesses) + " |", "|---|---|" + "---|" * len(harnesses)]
    for group in GROUPS:
        members = [row for row in rows if row.impl.group == group]
        if not members:
            continue
        cells = []
        for harness in harnesses:
            judged = [row for row in members
                      if harness in row.outcomes and row.outcomes[harness].verdict != Verdict.SKIP]
            flagged = [row for row in judged if row.outcomes[harness].verdict.flags]
            if group == "mutants":
                caught = [row for row in flagged if not _as_unmutated(row, harness, gate)]
                rejects_base = gate and harness in gate.outcomes and gate.outcomes[harness].verdict.flags
                note = " (rejects the unmutated base)" if rejects_base else ""
                cells.append(f"{len(caught)} of {len(judged)}{note}")
            elif group == "real-world":
                with_bugs = [row for row in judged if row.impl.known_bugs]
                caught = sum(1 for row in flagged if row.impl.known_bugs)
                cells.append(f"{caught} of {len(with_bugs)}; {len(flagged) - caught} other")
            else:
                cells.append(f"{len(flagged)} of {len(judged)}")
        what = {"correct": f"false alarms ({len(members)} correct implementations)",
                "mutants": f"bugs caught ({len(members)} mutants, one bug each)",
                "real-world": f"adapters with a known bug rejected; other rejections ({len(members)} adapters)"}[group]
        lines.append(f"| {group} | {what} | " + " | ".join(cells) + " |")
    return lines


def _cell(outcome: Outcome | None, as_unmutated: bool) -> str:
    if outcome is None:
        return "-"
    if as_unmutated:
        return f"{outcome.verdict.value}, as unmutated"
    marks = {Verdict.PASS: "pass", Verdict.FAIL: "**FAIL**", Verdict.ERROR: "**ERROR**", Verdict.SKIP: "skip"}
    return marks[outcome.verdict]


def detail_lines(rows: list[Row], harnesses: list[str]) -> list[str]:
    lines = ["| implementation | known bugs | " + " | ".join(harnesses) + " |", "|---|---|" + "---|" * len(harnesses)]
    gate = _gate(rows)
    for row in rows:
        bugs = ", ".join(row.impl.known_bugs) or ("every pass is a miss" if row.impl.group == "mutants" else "none")
        if row.impl.name in GUARDED_BUGS:
            bugs += f" ({', '.join(GUARDED_BUGS[row.impl.name])} answered by the adapter)"
        cells = " | ".join(_cell(row.outcomes.get(harness), row.impl.group == "mutants" and
                                 _as_unmutated(row, harness, gate)) for harness in harnesses)
        lines.append(f"| `{row.impl.key}` | {bugs} | {cells} |")
    return lines


MUTANT_REASON_CHARS = 140  # a mutant's rejections are many and alike: the start of each says enough


def reason_lines(rows: list[Row], harnesses: list[str]) -> list[str]:
    lines, gate, first_with = [], _gate(rows), {}
    for row in rows:
        for harness in harnesses:
            outcome = row.outcomes.get(harness)
            if not outcome or outcome.verdict == Verdict.PASS:
                continue
            reason = outcome.reason.replace("|", "\\|").replace("\n", " ")
            if row.impl.group == "mutants" and _as_unmutated(row, harness, gate):
                reason = "as the unmutated base"
            elif (harness, outcome.reason) in first_with:  # the same sample, the same numbers: said once
                reason = f"the same as `{first_with[harness, outcome.reason]}`"
            else:
                first_with[harness, outcome.reason] = row.impl.key
                reason = reason[:MUTANT_REASON_CHARS] if row.impl.group == "mutants" else reason
            lines.append(f"* `{row.impl.key}`, {harness}: {outcome.verdict.value.upper()}: {reason}")
    return lines or ["(none)"]


def versions() -> str:
    import torch
    import triton

    found = [f"torch {torch.__version__}", f"triton {triton.__version__}", f"python {platform.python_version()}"]
    for package in ("liger-kernel", "fla-core"):
        try:
            found.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{package} not installed")
    return ", ".join(found)


def markdown(rows: list[Row], harnesses: list[str], command: str, shape, seconds: float) -> str:
    import torch

    where = "on the GPU" if torch.cuda.is_available() else "in Triton's interpreter"
    head = [f"# Harness comparison ({datetime.date.today().isoformat()})", "",
            f"Command: {command}", "",
            f"Versions: {versions()}; {os.cpu_count()} CPUs; kernels run {where}; {seconds:.0f} s in all.",
            f"KernelBench shape: {shape[0]} x {shape[1]} float32 (`bench/_baselines.py` says what each "
            "baseline is).", "",
            "## Bugs caught and false alarms", ""]
    body = ["", "## Each implementation", "", *detail_lines(rows, harnesses), "",
            "## Why each rejection (and each skip)", "", *reason_lines(rows, harnesses), ""]
    return "\n".join([*head, *summary_lines(rows, harnesses), *body])


def render(paths: list[Path], shape: tuple[int, int]) -> str:
    """The Markdown of saved runs (``--json``), in the order of the registry."""
    recorded, commands = {}, []
    for path in paths:
        saved = json.loads(path.read_text())
        records = saved["rows"] if isinstance(saved, dict) else saved  # a list: the format before "command"
        commands.append(f"`{saved['command']}`" if isinstance(saved, dict) else f"`{path.name}`")
        recorded.update({record["implementation"]: record for record in records})
    rows = []
    for impl in implementations():
        if impl.key in recorded:
            saved = recorded[impl.key]["outcomes"]
            rows.append(Row(impl, {h: Outcome(Verdict(o["verdict"]), o["reason"]) for h, o in saved.items()},
                            {h: o["seconds"] or 0.0 for h, o in saved.items()}))
    harnesses = [h for h in HARNESSES if any(h in row.outcomes for row in rows)]
    seconds = sum(sum(row.seconds.values()) for row in rows)
    command = (f"`python bench/harness_comparison.py --render {' '.join(p.name for p in paths)}`, of the runs "
               + "; ".join(commands))
    return markdown(rows, harnesses, command, shape, seconds)


def _shape(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)x(\d+)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"shape={text!r}: give rows x columns, e.g. 128x4096")
    return int(match.group(1)), int(match.group(2))


def _names(text: str, allowed, what: str) -> list[str]:
    names = [name for name in text.split(",") if name]
    unknown = [name for name in names if name not in allowed]
    if unknown:
        raise argparse.ArgumentTypeError(f"{what}={text!r}: unknown {', '.join(unknown)}; "
                                         f"choose from {', '.join(allowed)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the Markdown table (required unless --worker)")
    parser.add_argument("--json", type=Path, help="every verdict, reason and time as JSON")
    parser.add_argument("--groups", type=lambda t: _names(t, GROUPS, "--groups"), default=list(GROUPS))
    parser.add_argument("--only", nargs="+", default=(), metavar="NAME", help="implementations by name or group/name")
    parser.add_argument("--baselines", type=lambda t: _names(t, tuple(BASELINES), "--baselines"),
                        default=list(BASELINES))
    parser.add_argument("--lse-fuzz", choices=("run", "skip"), default="run")
    parser.add_argument("--kernelbench-shape", type=_shape, default=KERNELBENCH_SHAPE)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker and per lse-fuzz run")
    parser.add_argument("--render", nargs="+", type=Path, metavar="JSON",
                        help="write --out from the --json files of earlier runs (a later file's verdicts win)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.baselines, args.kernelbench_shape)
        return 0
    if args.out is None:
        parser.error("--out FILE is required: where the Markdown table goes")
    if args.render:
        args.out.write_text(render(args.render, args.kernelbench_shape))
        print(f"wrote {args.out}")
        return 0
    impls = implementations(args.groups, args.only)
    start = time.monotonic()
    harnesses = [*args.baselines, *([LSE_FUZZ] if args.lse_fuzz == "run" else [])]
    command = "python bench/harness_comparison.py " + " ".join(sys.argv[1:] if argv is None else argv)

    def write(rows: list[Row]) -> None:  # after every implementation: a stopped run keeps what it judged
        partial = "" if len(rows) == len(impls) else f" (partial: {len(rows)} of {len(impls)} implementations)"
        args.out.write_text(markdown(rows, harnesses, f"`{command}`{partial}", args.kernelbench_shape,
                                     time.monotonic() - start))
        if args.json:
            records = [{"implementation": row.impl.key, "target": row.impl.target,
                        "known_bugs": list(row.impl.known_bugs),
                        "outcomes": {h: {**o.as_json(), "seconds": row.seconds.get(h)}
                                     for h, o in row.outcomes.items()}}
                       for row in rows]
            args.json.write_text(json.dumps({"command": command, "rows": records}, indent=1))

    run(impls, args.baselines, args.lse_fuzz == "run", args.kernelbench_shape, args.timeout, done=write)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
