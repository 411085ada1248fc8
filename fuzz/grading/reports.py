"""Reports of ``check`` and ``grade``: the JSONL and CSV records, the terminal table, Markdown, and
the human summary of one record.

Files are rewritten atomically (temporary file + ``os.replace``) after every candidate, so an
interrupted run leaves a valid report of the finished ones, which ``--resume`` keeps.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..memory.phase import describe as describe_memory
from ..outcomes import Verdict
from ..timing import describe_compile_summary
from .record import GradeRecord, MalformedRecord

__all__ = ["CSV_COLUMNS", "REPORT_CSV", "REPORT_JSONL", "atomic_write", "format_record", "read_records",
           "render_markdown", "render_table", "summary_counts", "write_reports"]

REPORT_JSONL = "grade.jsonl"
REPORT_CSV = "grade.csv"

CSV_COLUMNS = ("candidate", "verdict", "check", "reason", "flags", "examples", "seconds", "gbps",
               "speedup_vs_reference", "speedup_vs_torch", "reproducer", "replay")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and os.replace: never half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _csv_row(record: GradeRecord) -> dict[str, object]:
    bench = record.bench or {}
    return {
        "candidate": record.candidate, "verdict": record.verdict.value, "check": record.check or "",
        "reason": record.reason, "flags": ";".join(f["flag"] for f in record.flags),
        "examples": "" if record.examples is None else record.examples, "seconds": record.seconds,
        "gbps": bench.get("gbps", ""), "speedup_vs_reference": bench.get("speedup_vs_reference", ""),
        "speedup_vs_torch": bench.get("speedup_vs_torch", ""), "reproducer": record.reproducer or "",
        "replay": record.replay or "",
    }


def write_reports(records: Iterable[GradeRecord], out_dir: Path) -> None:
    """``grade.jsonl`` and ``grade.csv`` of ``records`` in ``out_dir`` (what first, then where, as
    :func:`fuzz.mutation.write_reports`)."""
    out = Path(out_dir)
    records = sorted(records, key=lambda r: r.candidate)
    atomic_write(out / REPORT_JSONL, "".join(json.dumps(r.to_json(), sort_keys=True) + "\n" for r in records))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for record in records:
        writer.writerow(_csv_row(record))
    atomic_write(out / REPORT_CSV, buffer.getvalue())


_NUMBER = (int, float)


def well_formed(record: object) -> bool:
    """Whether ``record`` (a GradeRecord, or a report line's JSON) is a record the grader writes
    (:meth:`GradeRecord.from_json`). A report file is input like any other: a record that is not
    what the grader writes is graded again, never rendered."""
    try:
        GradeRecord.from_json(record.to_json() if isinstance(record, GradeRecord) else record)
    except MalformedRecord:
        return False
    return True


def read_records(path: Path) -> list[GradeRecord]:
    """Records of an earlier report; unreadable or malformed lines (see :func:`well_formed`) are
    skipped: they will be graded again."""
    records = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        try:
            records.append(GradeRecord.from_json(record))
        except MalformedRecord:
            continue
    return records


def summary_counts(records: Iterable[GradeRecord]) -> dict[str, int]:
    counts = {v.value: 0 for v in Verdict}
    for record in records:
        counts[record.verdict.value] += 1
    return {k: v for k, v in counts.items() if v}


def render_table(records: list[GradeRecord], *, file=None) -> None:
    """The summary table (rich) of a grading run."""
    stream = file or sys.stdout
    console = Console(file=stream, width=None if stream.isatty() else 200)
    table = Table(title="lse-fuzz grade", show_lines=False)
    for column in ("candidate", "verdict", "check"):
        table.add_column(column, no_wrap=True)
    table.add_column("flags", overflow="fold")
    for column in ("GB/s", "vs ref", "time"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("reason", overflow="ellipsis", no_wrap=True, max_width=60)
    styles = {"pass": "green", "fail": "red", "error": "red", "crash": "magenta", "timeout": "yellow",
              "load_error": "cyan", "internal_error": "bold red", "unsupported": "blue"}
    for record in sorted(records, key=lambda r: r.candidate):
        bench = record.bench or {}
        flags = [f["flag"] for f in record.flags]
        # The check has its own column, the candidate its row: keep the reason to what is left.
        reason = re.sub(r"^(check '\w+' failed: |target='[^']*': |UNSUPPORTED on the CPU: )", "", record.reason or "")
        verdict = record.verdict.value
        table.add_row(
            escape(printable(record.candidate)), f"[{styles.get(verdict, '')}]{verdict}[/]",
            record.check or "", ", ".join(flags), str(bench.get("gbps", "")),
            str(bench.get("speedup_vs_reference", "")), f"{record.seconds or 0:.1f}s",
            escape(printable(reason.replace(record.target, record.candidate)[:200])),
        )
    console.print(table)
    counts = summary_counts(records)
    console.print(f"{len(records)} candidates: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` (written by a candidate, often) with control characters shown, not obeyed: an
    escape sequence in an exception message must not recolour, move or clear the reader's terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _code_span(text: str) -> str:
    """``text`` as one Markdown code span: literal, whatever it holds (links, images, HTML, pipes)."""
    text = printable(text).replace("\n", " ").replace("|", "\\|")
    ticks = "`" * (_longest_backticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""  # CommonMark strips one space each side
    return f"{ticks}{pad}{text}{pad}{ticks}" if text else ""


def _code_block(text: str) -> list[str]:
    """``text`` as a fenced block that nothing inside it can close (CommonMark: a fence ends only
    at a run of backticks at least as long as the one that opened it)."""
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return [fence + "text", printable(text), fence]


def render_markdown(records: list[GradeRecord], *, title: str) -> str:
    """A Markdown summary (for a pull-request comment): verdicts, failures, replay commands."""
    lines = [f"### {title}", ""]
    counts = summary_counts(records)
    lines.append(", ".join(f"**{n}** {v}" for v, n in counts.items()) or "no candidates")
    lines += ["", "| candidate | verdict | check | flags | GB/s | reason |", "|---|---|---|---|---|---|"]
    for record in sorted(records, key=lambda r: r.candidate):
        bench = record.bench or {}
        flags = ", ".join(_code_span(f["flag"]) for f in record.flags)
        reason = _code_span((record.reason or "")[:200])
        lines.append(f"| {_code_span(record.candidate)} | **{record.verdict.value}** | {record.check or ''} | "
                     f"{flags} | {bench.get('gbps', '')} | {reason} |")
    for record in records:
        if record.verdict is Verdict.PASS or not (record.details or record.replay):
            continue
        lines += ["", f"<details><summary><code>{html.escape(record.candidate)}</code>: {record.verdict.value}"
                      "</summary>", ""]
        if record.details:
            lines += _code_block(record.details.rstrip()[-6000:])
        if record.replay:
            lines += ["", f"Replay: {_code_span(record.replay)}"]
        lines += ["", "</details>"]
    options = records[0].options if records else {}
    if options:
        lines += ["", f"<sub>seed {options.get('seed')} (id {options.get('seed_id')}), budget {options.get('budget')}, "
                      f"contract: {options.get('declared_contract') or options.get('contract')}, device {options.get('device')}</sub>"]
    return "\n".join(lines) + "\n"


def format_record(record: GradeRecord) -> str:
    """The human summary of one record (what ``lse-fuzz check`` prints)."""
    verdict = record.verdict
    head = f"{verdict.label} {record.target}"
    if record.check:
        head += f": check {record.check!r}"
    lines = [head]
    seconds = record.seconds or 0.0
    options = record.options
    if record.examples is not None:
        lines.append(f"  {record.examples} examples, {record.calls} calls in {seconds:.1f} s "
                     f"({record.candidate_seconds:.1f} s in the implementation); seed {record.seed}"
                     + (" + private seed" if options.get("private_seed") else ""))
        lines.append(f"  contract: {options.get('declared_contract') or options['contract']}")
        if record.shape_fit:
            lines.append(f"  shapes:   {record.shape_fit['description']}")
    details = (record.details or "").rstrip()
    if verdict in (Verdict.FAIL, Verdict.ERROR, Verdict.UNSUPPORTED) and details:
        lines += ["  " + line for line in details.splitlines()]
        if (record.costs or {}).get("shrink_stopped"):
            budget = options.get("shrink_seconds")
            lines.append(f"  shrinking stopped at its budget{f' of {budget:g} s' if budget else ''} (--shrink-seconds): "
                         "this is the smallest failing input found by then")
    else:
        lines.append(f"  {record.reason}")
        example = record.counterexample
        if example:
            lines.append(f"  input:    {example['description']}")
        if details:
            tail = [line for line in details.splitlines()
                    if "isolation_worker.py" not in line and 'File "<string>"' not in line
                    and not line.startswith("Extension modules:")][-15:]
            lines.append("  worker stderr (last lines):")
            lines += ["    " + line for line in tail]
        if record.replay and verdict is not Verdict.PASS:
            lines.append(f"  replay:   {record.replay}")
    if isinstance(record.memory, dict) and not record.memory.get("finding"):  # a finding is the failure itself
        lines.append("  " + describe_memory(record.memory))
    for flag in record.flags:
        lines.append(f"  flag:     {flag['flag']} ({flag['severity']}): {flag['message']}")
    slow = record.slow
    if slow:
        slowest = max(slow, key=lambda call: call["seconds"])
        reference = slowest.get("reference_seconds")
        against = f" vs {reference:.3f} s" if isinstance(reference, _NUMBER) else " (reference.lse not timed here)"
        lines.append(f"  slow:     {len(slow)} call(s) far slower than reference.lse (a finding, not a failure); the "
                     f"slowest: {slowest['call']} on a {slowest['dtype']} {tuple(slowest['shape'])} {slowest['layout']} "
                     f"input, {slowest['seconds']:.1f} s{against}")
    compiled = describe_compile_summary(record.compiles)
    if compiled:
        lines.append(f"  compiles: {compiled}")
    bench = record.bench
    if bench:
        if "error" in bench:
            lines.append(f"  bandwidth: not measured ({bench['error']})")
        else:
            text = f"  bandwidth: {bench['gbps']} GB/s on {bench['shape'][0]}x{bench['shape'][1]} {bench['dtype']}"
            for name in ("reference", "torch"):
                if f"speedup_vs_{name}" in bench:
                    text += f"; {bench[f'speedup_vs_{name}']}x {name} ({bench[f'{name}_gbps']} GB/s)"
            if "copy_gbps" in bench:
                text += f"; a copy of the input: {bench['copy_gbps']} GB/s"
            if not bench.get("output_ok", True):
                text += "; WARNING: its output on the benchmark input is wrong"
            lines.append(text)
    return printable("\n".join(lines))
