"""Verdict agreement between devices: the same fuzz runs on the CPU and on a GPU, verdict by verdict.

    python bench/agreement.py run --device cpu|cuda --out DIR [--seeds 10] [--first-seed 0] [--jobs N]
                                  [--budget KEY=N,...] [--only corpus,kernels,mutants,mutate] [--match TEXT]
                                  [--deadline S] [--resume]
    python bench/agreement.py compare CPU_DIR GPU_DIR --out FILE.md

``run`` runs four parts per seed with the project's own commands, from the tree this file is in:
``corpus`` (tests/implementations/correct through bench/campaign.py, its contracts.json applying:
each must pass), ``kernels`` (every other implementation that computes values: the autotuned kernels
of tests/implementations/tuned, the backward ones, the value-computing candidates and the adapters of
examples/real_world, each with the contract its folder's contracts.json declares; their verdict,
whatever it is, must be the same on both devices), ``mutants`` (``lse-fuzz mutants``) and ``mutate`` (``lse-fuzz mutate TARGET
--no-cache`` of three small corpus kernels). Seed, examples, element caps and parts (the derived
seeds a run's examples are split over) are explicit and the same on every device; the strategies'
row cap is not an option (72 rows on the CPU, none on a GPU), so the drawn examples may still differ.
The defaults fit a 2-core CPU; give a GPU run the same ``--budget`` (``--resume`` refuses other
budgets, ``compare`` flags them).
DIR gets ``header.json`` (budgets; each session's machine, versions, commit) and ``records.jsonl``,
appended as each finishes: one line per (part, implementation or mutant, seed) with the device,
verdict or status, failing or killing check, seconds and command; one ``"part": "run"`` line per
command. Reports go to a temporary folder, deleted once parsed. Exit code 0 when all ran, 3 when
``--deadline`` left work (``--resume`` continues it).

``compare`` writes Markdown: per item and device, the seeds passed or detected and by which checks; whether
the devices agree seed by seed (corpus: pass vs fail; kernels: the verdict itself; mutant: detected, Killed or
Timeout, vs not); each pair that differs.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz.outcomes import MutantStatus, Verdict

CORPUS = "tests/implementations/correct"
MUTATE_TARGETS = tuple(f"{CORPUS}/{name}.py" for name in ("exp2_based", "multi_row", "heuristics"))
KERNELS = (  # the implementations of the "kernels" part, beside the correct corpus
    *(f"tests/implementations/tuned/{name}.py" for name in (
        "autotuned", "autotune_over_heuristics", "heuristics_over_autotune", "hooks", "pruned", "restored",
        "tail_bug_32")),
    *(f"tests/implementations/backward/{name}.py" for name in (
        "torch_logsumexp", "no_autograd", "no_max_shift", "overwrites_input", "upstream_not_applied")),
    # The candidates that compute values; the others (hangs, crashes, exits, import and resource
    # failures) judge the grader's isolation, which does not depend on the device.
    *(f"tests/implementations/candidates/{name}.py" for name in (
        "aliases_input", "bfloat16_sum_in_bfloat16", "buggy_no_max", "caches_by_object", "caches_by_shape",
        "decoy_kernel", "inline_asm", "mutates_input", "noisy", "raises", "skips_last_row", "torch_float64",
        "triton_two_pass", "writes_padding", "wrong_dtype", "wrong_shape")),
    *(f"examples/real_world/{name}.py" for name in (
        "torch_logsumexp", "torch_compile_logsumexp", "liger_cross_entropy", "fla_logsumexp", "fla_cross_entropy",
        "flag_gems_logsumexp", "quack_cross_entropy", "te_cross_entropy", "flash_attn_cross_entropy",
        "unsloth_cross_entropy")),
)
FILE_PARTS = {"corpus": (CORPUS,), "kernels": KERNELS}  # parts run through campaign.py, a record per file
PARTS = ("corpus", "kernels", "mutants", "mutate")
# Examples per run (a corpus implementation, a bundled mutant and the gate, an operator mutant, a mutate
# survivor's lse-thorough re-run) and the largest M*N each part draws: 10 seeds take about an hour on 2
# shared CPU cores (reduce_combine.py's tl.reduce costs seconds an example there at 16384 elements). At
# 16384 a GPU still draws rows of 4 of its 4096-column tiles: its reference kernel loops and splits rows.
DEFAULT_BUDGETS = {"corpus": 30, "kernels": 30, "mutants": 100, "mutate": 20, "thorough": 30,
                   "corpus_max_elements": 4096, "kernels_max_elements": 4096,
                   "mutants_max_elements": 16384, "mutate_max_elements": 4096}
# One Hypothesis run per run (no parts of derived seeds) on every device: check's default is 2 and 4.
PARTS_PER_RUN = {"corpus": 1, "kernels": 1, "mutants": 1}
HEADER, RECORDS = "header.json", "records.jsonl"
JUDGED = {"corpus": (0, 1), "kernels": (0, 1), "mutants": (0, 1), "mutate": (0,)}  # exits of a command that judged all it ran
DETECTED, NOT_DETECTED, PASSED, FAILED = "detected", "not detected", "pass", "fail"


def parse_budgets(text: str) -> dict[str, int]:
    """``corpus=100,thorough=0`` -> the default budgets with those replaced."""
    budgets = dict(DEFAULT_BUDGETS)
    for entry in filter(None, (part.strip() for part in text.split(","))):
        key, _, value = (word.strip() for word in entry.partition("="))
        key, least = key.replace("-", "_"), 0 if key == "thorough" else 1
        if key not in budgets or not value.isdigit() or int(value) < least:
            raise argparse.ArgumentTypeError(f"{entry!r}: expected KEY=N, KEY among {', '.join(DEFAULT_BUDGETS)}, "
                                             "N an int >= 1 (>= 0 for thorough)")
        budgets[key] = int(value)
    return budgets


def parse_parts(text: str) -> list[str]:
    named = {part.strip() for part in text.split(",")} - {""}
    if not named or named - set(PARTS):
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated parts among {','.join(PARTS)}")
    return [part for part in PARTS if part in named]


def budget_text(budgets: dict[str, int]) -> str:
    return ",".join(f"{key}={value}" for key, value in budgets.items())


def summary(text: str | None) -> dict:
    """A failure message's first line and its counterexample's ``input:`` line (None without one)."""
    lines = [line.strip() for line in (text or "").strip().splitlines()]
    found = [line[len("input:"):].strip() for line in lines if line.startswith("input:")]
    return {"reason": lines[0][:300] if lines else "", "input": found[0] if found else None}


def mutant_records(report: dict) -> list[dict]:
    """One record per mutant of a mutation.json (Stryker schema, as lse-fuzz mutants and mutate write)."""
    config = report.get("config") or {}
    thorough, retried = set(config.get("thorough") or []), set(config.get("retried_after_timeout") or [])
    return [{"item": mutant["id"], "file": file, "status": MutantStatus(mutant["status"]).value,
             "check": (mutant.get("killedBy") or [None])[0], "examples": mutant.get("testsCompleted"),
             "seconds": round((mutant.get("duration") or 0.0) / 1000.0, 2),
             **summary(mutant.get("statusReason")),
             "again": "thorough" if mutant["id"] in thorough else "after timeout" if mutant["id"] in retried else None}
            for file, entry in sorted(report["files"].items()) for mutant in entry["mutants"]]


def file_record(campaign_record: dict, part: str) -> dict:
    """A campaign.py record as kept here: the file relative to the tree, the failure's first lines; the
    item is the file's name (the corpus) or its folder's and its name (kernels: names repeat there)."""
    path = Path(campaign_record["target"].rpartition(":")[0])
    failed = campaign_record["verdict"] != Verdict.PASS.value
    failure = (campaign_record.get("details") or campaign_record.get("reason")) if failed else None
    item = path.name if part == "corpus" else f"{path.parent.name}/{path.name}"
    return {"target": (path.relative_to(ROOT) if path.is_absolute() else path).as_posix(), "item": item,
            "verdict": campaign_record["verdict"], "check": campaign_record.get("check"),
            "examples": campaign_record.get("examples"), "seconds": campaign_record.get("seconds"),
            **summary(failure)}


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def done_keys(records: list[dict]) -> set[tuple]:
    """What --resume skips: each corpus or kernels run (part, file, seed) but a load_error (a library
    missing, say: it runs again once installed), and each mutants or mutate command whose ``run`` line
    shows it judged its mutants (not a failed gate or a crash: those run again)."""
    return ({(r["part"], r["target"], r["seed"]) for r in records
             if r["part"] in FILE_PARTS and r["verdict"] != Verdict.LOAD_ERROR.value}
            | {(r["of"], r["target"], r["seed"]) for r in records
               if r["part"] == "run" and r["of"] not in FILE_PARTS and r["exit"] in JUDGED[r["of"]]})


@dataclass(frozen=True)
class Unit:  # one command: a part, its target (the corpus, "kernels", "mutants" or a kernel), a seed
    part: str
    target: str
    seed: int


def plan(parts: list[str], seeds: range) -> list[Unit]:
    """Seed by seed, every part, so that a run stopped by its deadline leaves whole seeds."""
    targets = {"corpus": (CORPUS,), "kernels": ("kernels",), "mutants": ("mutants",), "mutate": MUTATE_TARGETS}
    return [Unit(part, target, seed) for seed in seeds for part in parts for target in targets[part]]


@dataclass(frozen=True)
class Setup:
    device: str
    budgets: dict
    jobs: int

    def command(self, unit: Unit, report: str, files: list[str] = ()) -> list[str]:
        """The unit's command, ``python`` standing for this interpreter, ``report`` for its report."""
        budgets, seed = self.budgets, str(unit.seed)
        if unit.part in FILE_PARTS:
            return ["python", "bench/campaign.py", *files, "--seeds", "1", "--first-seed", seed,
                    "--budget", str(budgets[unit.part]), "--workers", str(self.jobs),
                    "--out", f"{report}/campaign.jsonl", "--", "--device", self.device,
                    "--max-elements", str(budgets[f"{unit.part}_max_elements"]),
                    "--parts", str(PARTS_PER_RUN[unit.part])]
        common = ["--seed", seed, "--device", self.device, "-j", str(self.jobs), "--out-dir", report, "-q"]
        if unit.part == "mutants":
            return ["python", "-m", "fuzz", "mutants", *common, "--budget", str(budgets["mutants"]),
                    "--max-elements", str(budgets["mutants_max_elements"]), "--parts", str(PARTS_PER_RUN["mutants"])]
        return ["python", "-m", "fuzz", "mutate", unit.target, *common, "--budget", str(budgets["mutate"]),
                "--thorough-budget", str(budgets["thorough"]),
                "--max-elements", str(budgets["mutate_max_elements"]), "--no-cache"]


def _append(sink, device: str, record: dict) -> None:
    sink.write(json.dumps({"device": device, **record}) + "\n")
    sink.flush()


def _execute(argv: list[str], log: Path, ok: tuple[int, ...], on_poll=lambda: None) -> int:
    """Run ``argv`` (``python``: this interpreter) in this tree, importing its packages, the output to
    ``log`` (its tail printed on an exit code not in ``ok``); ``on_poll`` is called every second."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable if argv[0] == "python" else argv[0], *argv[1:]],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            while process.poll() is None:
                on_poll()
                time.sleep(1.0)
        except BaseException:
            process.terminate()
            process.wait()
            raise
    on_poll()
    if process.returncode not in ok:
        print(f"{shlex.join(argv)} exited {process.returncode}:", flush=True)
        print("\n".join("    " + line for line in log.read_text(errors="replace").splitlines()[-20:]), flush=True)
    return process.returncode


def run_files(unit: Unit, setup: Setup, files: list[str], write, deadline: float | None) -> bool:
    """``files``' runs of one seed through campaign.py, each recorded as the campaign appends it.
    False when runs were left unstarted (the deadline)."""
    scratch = Path(tempfile.mkdtemp(prefix="agreement-"))
    argv = setup.command(unit, str(scratch), files)
    if deadline is not None:
        argv[argv.index("--"):argv.index("--")] = ["--deadline", f"{max(0.0, deadline):.0f}"]
    campaign_out, seen = scratch / "campaign.jsonl", 0

    def collect() -> None:
        nonlocal seen
        text = campaign_out.read_text() if campaign_out.is_file() else ""
        complete = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
        for line in complete[seen:]:
            record = file_record(json.loads(line), unit.part)
            shown = shlex.join(setup.command(unit, "DIR", [record["target"]]))
            write({"part": unit.part, "seed": unit.seed, **record, "command": shown})
            print(f"{unit.part:<7} seed {unit.seed:>3} {record['verdict']:<8} {record['seconds']:7.1f} s {record['item']}"
                  + (f": {record['reason']}" if record["reason"] else ""), flush=True)
        seen = max(seen, len(complete))

    started = time.perf_counter()
    code = _execute(argv, scratch / "log.txt", (*JUDGED[unit.part], 3), collect)
    write({"part": "run", "of": unit.part, "target": unit.target, "seed": unit.seed, "exit": code,
           "seconds": round(time.perf_counter() - started, 1), "runs": seen,
           "command": shlex.join(setup.command(unit, "DIR", files))})
    shutil.rmtree(scratch, ignore_errors=True)
    return seen == len(files)


def run_mutation(unit: Unit, setup: Setup, write) -> bool:
    """One ``lse-fuzz mutants`` or ``mutate`` command: a record per mutant, then its ``run`` line."""
    scratch = Path(tempfile.mkdtemp(prefix="agreement-"))
    shown = shlex.join(setup.command(unit, "REPORT"))
    started = time.perf_counter()
    code = _execute(setup.command(unit, str(scratch / "report")), scratch / "log.txt", JUDGED[unit.part])
    seconds = round(time.perf_counter() - started, 1)
    report = scratch / "report" / "mutation.json"
    records = mutant_records(json.loads(report.read_text())) if report.is_file() else []
    for record in records:
        write({"part": unit.part, "target": unit.target, "seed": unit.seed, **record, "command": shown})
    counts = dict(sorted(collections.Counter(r["status"] for r in records).items()))
    write({"part": "run", "of": unit.part, "target": unit.target, "seed": unit.seed, "exit": code,
           "seconds": seconds, "mutants": len(records), "statuses": counts, "command": shown})
    print(f"{unit.part:<7} seed {unit.seed:>3} exit {code} {seconds:7.1f} s {unit.target}: "
          + (", ".join(f"{n} {s}" for s, n in counts.items()) or "no mutants recorded"), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return True


def _git(*argv: str) -> str | None:
    try:
        result = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def session_header(device: str, argv: list[str]) -> dict:
    """The machine, versions and tree of this session (torch is imported here: compare needs none)."""
    import platform

    import torch
    import triton

    from bench._common import run_header

    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": run_header(device),
            "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else "CPU",
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "cpus": os.cpu_count(), "commit": _git("rev-parse", "--short", "HEAD"),
            "modified": [line[3:] for line in status.splitlines()] if status else [],
            "argv": shlex.join(["python", "bench/agreement.py", *argv])}


def write_header(out: Path, args, argv: list[str]) -> dict:
    path = out / HEADER
    fixed = {"device": args.device, "budgets": args.budget, "parts_per_run": PARTS_PER_RUN,
             "corpus": CORPUS, "kernels": list(KERNELS), "mutate_targets": list(MUTATE_TARGETS)}
    header = json.loads(path.read_text()) if path.is_file() else {**fixed, "sessions": []}
    for key, value in fixed.items():
        if header.get(key) != value:
            raise SystemExit(f"agreement.py: error: {path} has {key}={header.get(key)!r}, this run {value!r}: "
                             f"resume with --budget {budget_text(header['budgets'])}, or another --out")
    header["sessions"].append(session_header(args.device, argv))
    path.write_text(json.dumps(header, indent=1) + "\n")
    return header


def run(args, argv: list[str]) -> int:
    from fuzz.grading import discover

    records_path = args.out / RECORDS
    if records_path.exists() and not args.resume:
        raise SystemExit(f"agreement.py: error: {records_path} exists; pass --resume to continue it, or another --out")
    args.out.mkdir(parents=True, exist_ok=True)
    session = write_header(args.out, args, argv)["sessions"][-1]
    done = done_keys(read_records(records_path))
    files = {part: [f for f in (Path(c.path).relative_to(ROOT).as_posix()
                                for c in discover([str(ROOT / t) for t in targets])) if args.match in f]
             for part, targets in FILE_PARTS.items()}
    setup = Setup(args.device, args.budget, args.jobs)
    units = [u for u in plan(args.only, range(args.first_seed, args.first_seed + args.seeds))
             if (u.part, u.target, u.seed) not in done
             and (u.part not in files or any((u.part, f, u.seed) not in done for f in files[u.part]))
             and (u.part in files or args.match in u.target)]
    print(f"# {session['machine']}; commit {session['commit']}"
          + (f" with {len(session['modified'])} files modified" if session["modified"] else "")
          + f"\n# budgets {budget_text(args.budget)}; {len(done)} done, {len(units)} commands to run", flush=True)
    started, unstarted = time.perf_counter(), 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the command running too (see _execute)
    with open(records_path, "a") as sink:
        write = functools.partial(_append, sink, args.device)
        for index, unit in enumerate(units):
            left = None if args.deadline is None else args.deadline - (time.perf_counter() - started)
            missing = [f for f in files.get(unit.part, ()) if (unit.part, f, unit.seed) not in done]
            if (left is not None and left <= 0) or not (run_mutation(unit, setup, write) if unit.part not in files
                                                        else run_files(unit, setup, missing, write, left)):
                unstarted = len(units) - index
                break
    print(f"{'INCOMPLETE' if unstarted else 'DONE'}: {len(units) - unstarted} commands in "
          f"{time.perf_counter() - started:.0f} s" + (f"; {unstarted} not started (--resume)" if unstarted else ""))
    return 3 if unstarted else 0


def verdict_class(record: dict) -> str:
    """pass/fail for a corpus run; a kernels run's verdict itself (pass, fail, unsupported, error, ...);
    detected (Killed or Timeout, as Stryker counts) or not for a mutant."""
    if record["part"] == "corpus":
        return PASSED if record["verdict"] == Verdict.PASS.value else FAILED
    if record["part"] == "kernels":
        return record["verdict"]
    return DETECTED if MutantStatus(record["status"]).detected else NOT_DETECTED


def outcome(record: dict) -> str:  # the corpus or kernels run's verdict, the mutant's status
    return record["verdict"] if record["part"] in FILE_PARTS else record["status"]


def by_item(records: list[dict]) -> dict[tuple, dict[int, dict]]:
    """(part, target, item) -> {seed: record}; a later record of the same run replaces an earlier one."""
    items: dict[tuple, dict[int, dict]] = collections.defaultdict(dict)
    for record in (r for r in records if r["part"] in PARTS):
        items[(record["part"], record["target"], record["item"])][record["seed"]] = record
    return items


def _item_order(key: tuple) -> tuple:
    """Parts in order; a mutate mutant (``operator@file:line:column``) by its place in the file."""
    name, _, location = key[2].partition("@")
    file, _, position = location.partition(":")
    return PARTS.index(key[0]), key[1], file, tuple(int(n) for n in position.split(":") if n.isdigit()), name


def compare(left: list[dict], right: list[dict]) -> dict:
    """Seed by seed, item by item: which pairs agree, differ, or ran on one device only; and, as
    information, detected pairs whose killing check differs and same-class pairs of other statuses."""
    left_items, right_items = by_item(left), by_item(right)
    found = {"rows": [], "agree": [], "differ": [], "one_sided": [], "check_differs": [], "status_differs": []}
    for key in sorted(set(left_items) | set(right_items), key=_item_order):
        on_left, on_right = left_items.get(key, {}), right_items.get(key, {})
        found["rows"].append((key, on_left, on_right))
        for seed in sorted(set(on_left) | set(on_right)):
            a, b = on_left.get(seed), on_right.get(seed)
            pair = (key, seed, a, b)
            if a is None or b is None:
                found["one_sided"].append(pair)
            elif verdict_class(a) != verdict_class(b):
                found["differ"].append(pair)
            else:
                found["agree"].append(pair)
                if verdict_class(a) in (DETECTED, FAILED, Verdict.FAIL.value) and a.get("check") != b.get("check"):
                    found["check_differs"].append(pair)
                elif outcome(a) != outcome(b):
                    found["status_differs"].append(pair)
    return found


def cell(part: str, records: dict[int, dict]) -> str:
    """'8/10 detected · Killed 8, Survived 2 · agreement 6, bounds 2' for one item on one device."""
    if not records:
        return "-"
    if part == "kernels":  # '5/5 fail · agreement 3, nan_inf 2'
        verdicts = collections.Counter(outcome(r) for r in records.values())
        checks = collections.Counter(r["check"] for r in records.values() if r.get("check"))
        return (", ".join(f"{n}/{len(records)} {v}" for v, n in verdicts.most_common())
                + (" · " + ", ".join(f"{c} {n}" for c, n in checks.most_common()) if checks else ""))
    positive = PASSED if part == "corpus" else DETECTED
    classes = collections.Counter(verdict_class(r) for r in records.values())
    statuses = collections.Counter(outcome(r) for r in records.values())
    checks = collections.Counter(r["check"] for r in records.values()
                                 if r.get("check") and verdict_class(r) in (DETECTED, FAILED))
    text = f"{classes[positive]}/{len(records)} {positive}"
    if part != "corpus" or classes[positive] != len(records):
        text += " · " + ", ".join(f"{s} {n}" for s, n in statuses.most_common())
    if checks:
        text += " · " + ", ".join(f"{c} {n}" for c, n in checks.most_common())
    return text


def agree_cell(on_left: dict, on_right: dict) -> str:
    common = set(on_left) & set(on_right)
    agreeing = sum(verdict_class(on_left[s]) == verdict_class(on_right[s]) for s in common)
    one_sided = len(set(on_left) ^ set(on_right))
    text = "-" if not common else (f"yes {agreeing}/{len(common)}" if agreeing == len(common)
                                   else f"**no** {agreeing}/{len(common)}")
    return text + (f" (+{one_sided} on one device)" if one_sided else "")


def describe(record: dict | None, label: str) -> str:
    if record is None:
        return f"{label}: not run"
    text = f"{label} **{outcome(record)}**" + (f" by `{record['check']}`" if record.get("check") else "")
    details = "; ".join(filter(None, (record.get("reason"), record.get("input") and f"input {record['input']}",
                                      record.get("again") and f"run again: {record['again']}")))
    return text + (f" ({details})" if details else "")


def _pair_line(pair: tuple, labels: tuple[str, str]) -> str:
    (part, _, item), seed, a, b = pair
    return f"- {part} `{item}` seed {seed}: {describe(a, labels[0])} / {describe(b, labels[1])}"


def _session_lines(headers: tuple[dict, dict], labels: tuple[str, str]) -> list[str]:
    lines = []
    for header, label in zip(headers, labels):
        sessions = header.get("sessions") or [{}]
        modified = f" + {len(sessions[-1]['modified'])} modified files" if sessions[-1].get("modified") else ""
        lines.append(f"- {label}: {sessions[-1].get('machine', '?')}; commit {sessions[-1].get('commit')}{modified}; "
                     f"{len(sessions)} session(s) from {sessions[0].get('started')}; "
                     f"budgets `{budget_text(header.get('budgets') or {})}`")
    differ = headers[0].get("budgets") != headers[1].get("budgets")
    return lines + (["- **the budgets differ: the devices were not asked the same questions**"] if differ else [])


def render(found: dict, headers: tuple[dict, dict], labels: tuple[str, str]) -> str:
    rows = found["rows"]
    kinds = collections.Counter(key[0] for key, _, _ in rows)
    seeds = sorted({seed for _, a, b in rows for seed in (*a, *b)})
    compared = len(found["agree"]) + len(found["differ"])
    lines = [f"# Verdict agreement: {labels[0]} and {labels[1]}", "",
             f"**{len(rows)} items ({kinds['corpus']} corpus implementations, {kinds['kernels']} other "
             f"implementations, {kinds['mutants']} bundled mutants, "
             f"{kinds['mutate']} `mutate` mutants) x {len(seeds)} seeds"
             + (f" ({seeds[0]}..{seeds[-1]})" if seeds else "")
             + f": {compared} pairs on both devices, {len(found['agree'])} agree, {len(found['differ'])} differ; "
             f"{len(found['one_sided'])} on one device only; the killing check differs in "
             f"{len(found['check_differs'])} agreeing pairs.**", "",
             *_session_lines(headers, labels), "",
             ("A pair is one item and one seed on both devices. Classes: a corpus implementation passes or fails; "
              "another implementation gets a verdict (pass, fail, unsupported, error, ...); a mutant is detected (Killed or Timeout) or not (Survived, NoCoverage, CompileError, RuntimeError)."),
             "", f"| part | item | {labels[0]} | {labels[1]} | agree | killing check differs |", "|---|---|---|---|---|---|"]
    check_seeds = collections.Counter(key for key, _, _, _ in found["check_differs"])
    for key, on_left, on_right in rows:
        part, _, item = key
        lines.append(f"| {part} | `{item}` | {cell(part, on_left)} | {cell(part, on_right)} | "
                     f"{agree_cell(on_left, on_right)} | {check_seeds.get(key) or ''} |")
    for title, pairs in (("Pairs that differ", found["differ"]), ("Pairs on one device only", found["one_sided"]),
                         ("Killing check differs (information)", found["check_differs"]),
                         ("Same class, another status (information)", found["status_differs"])):
        shown = _one_sided_lines(pairs, labels) if pairs is found["one_sided"] else \
            [_pair_line(pair, labels) for pair in pairs]
        lines += ["", f"## {title} ({len(pairs)})", "", *(shown or ["none"])]
    return "\n".join(lines) + "\n"


def _one_sided_lines(pairs: list[tuple], labels: tuple[str, str]) -> list[str]:
    """One line per item and device: the seeds only that device ran (a run cut short on the other)."""
    seeds = collections.defaultdict(list)
    for (part, _, item), seed, a, _b in pairs:
        seeds[(part, item, labels[0] if a is not None else labels[1])].append(seed)
    return [f"- {part} `{item}`: seed{'s' if len(found) > 1 else ''} {', '.join(map(str, sorted(found)))} on the "
            f"{label} only"
            for (part, item, label), found in seeds.items()]


def unfinished(records: list[dict], label: str) -> list[str]:
    """The commands that ended without their verdicts (a gate failure, a crash, a deadline)."""
    return [f"- {label}: {r['of']} seed {r['seed']} {r['target']} exited {r['exit']}: `{r['command']}`"
            for r in records if r["part"] == "run" and r["exit"] not in JUDGED[r["of"]]]


def compare_main(args) -> int:
    for folder in (args.left, args.right):
        if not (folder / HEADER).is_file():
            raise SystemExit(f"agreement.py: error: {folder / HEADER} is missing; is {folder} the --out of a run?")
    headers = tuple(json.loads((folder / HEADER).read_text()) for folder in (args.left, args.right))
    left, right = read_records(args.left / RECORDS), read_records(args.right / RECORDS)
    names = [(h.get("sessions") or [{}])[-1].get("device_name") or h.get("device") for h in headers]
    labels = (names[0], names[1]) if names[0] != names[1] else (str(args.left), str(args.right))
    text = render(compare(left, right), headers, labels)
    stopped = unfinished(left, labels[0]) + unfinished(right, labels[1])
    if stopped:
        text += f"\n## Commands that did not finish ({len(stopped)})\n\n" + "\n".join(stopped) + "\n"
    args.out.write_text(text)
    print(text.splitlines()[2])
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="mode", required=True)
    runner = commands.add_parser("run", help="run the parts on one device, records to --out")
    runner.add_argument("--device", required=True, choices=("cpu", "cuda"))
    runner.add_argument("--out", type=Path, required=True, help="the folder of header.json and records.jsonl")
    runner.add_argument("--seeds", type=int, default=10, help="seeds per item (default 10)")
    runner.add_argument("--first-seed", type=int, default=0, help="seeds run from here (default 0)")
    runner.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="workers per command (default: CPUs)")
    runner.add_argument("--budget", type=parse_budgets, default=dict(DEFAULT_BUDGETS), metavar="KEY=N,...",
                        help=f"budgets, the same on every device (default {budget_text(DEFAULT_BUDGETS)})")
    runner.add_argument("--only", type=parse_parts, default=list(PARTS), metavar="PARTS",
                        help=f"comma-separated parts among {','.join(PARTS)} (default all)")
    runner.add_argument("--match", default="", metavar="TEXT",
                        help="only the files and targets whose path holds TEXT (one implementation run again, "
                             "with its library on PYTHONPATH, say)")
    runner.add_argument("--deadline", type=float, default=None, help="start no command after S seconds")
    runner.add_argument("--resume", action="store_true", help="skip what --out records already")
    comparer = commands.add_parser("compare", help="the table of two runs' verdicts, in Markdown")
    comparer.add_argument("left", type=Path, metavar="CPU_DIR")
    comparer.add_argument("right", type=Path, metavar="GPU_DIR")
    comparer.add_argument("--out", type=Path, required=True, help="the Markdown file to write")
    args = parser.parse_args(argv)
    if args.mode == "compare":
        return compare_main(args)
    for name, least in (("seeds", 1), ("jobs", 1), ("first_seed", 0)):
        if getattr(args, name) < least:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)}; expected an int >= {least}")
    return run(args, argv)


if __name__ == "__main__":
    raise SystemExit(main())
