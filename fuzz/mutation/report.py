"""Reports of a mutation analysis: Stryker JSON, a Markdown summary, and terminal tables.

The JSON follows the mutation-testing-report schema (``fuzz/schemas/``, version 3.8.4 of the npm
package ``mutation-testing-report-schema``, Apache-2.0), so any tool that reads Stryker reports
(the ``mutation-testing-elements`` HTML viewer, dashboards) reads it. Mapping:

* ``files``: one entry per source file a mutant patches (keyed by its path relative to the
  project root, with the file's full source); each mutant's ``location`` is the span its patch
  replaces and ``replacement`` the text it puts there (a mutant that is a whole file of its own,
  like the planted test doubles, points at that file);
* ``mutatorName``: the pitfall; ``description``: where the field documents it;
* ``status``: :class:`fuzz.mutation.MutantStatus` (Stryker's names); ``statusReason``: the
  failure message of the killing check (counterexample, expected vs got, replay command), or the
  crash, timeout or compile error;
* ``killedBy``: the check that killed it (every killing check in a matrix run); the checks are
  the "tests", listed under ``testFiles`` for ``fuzz/checks/``;
* ``testsCompleted``: examples run; ``duration``: milliseconds of checking.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from rich.table import Table

from .._version import __version__
from ..checks import CHECKS
from ..outcomes import MutantStatus
from .results import MutationReport

__all__ = ["SCHEMA_PATH", "environment", "markdown_summary", "rich_tables", "schema", "stryker_report", "test_files",
           "validate_report", "write_reports"]

SCHEMA_PATH = Path(__file__).parents[1] / "schemas" / "mutation-testing-report-schema.json"
PROJECT_ROOT = Path(__file__).absolute().parents[2]
SCHEMA_VERSION = "2"  # the report format's own version (the schema accepts 1.x and 2.x)
THRESHOLDS = {"high": 100, "low": 90}

_SYMBOL = {
    MutantStatus.KILLED: "K",
    MutantStatus.SURVIVED: "-",
    MutantStatus.TIMEOUT: "T",
    MutantStatus.RUNTIME_ERROR: "E",
    MutantStatus.COMPILE_ERROR: "C",
    MutantStatus.NO_COVERAGE: "N",
}


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def validate_report(data: dict) -> None:
    """Raise jsonschema.ValidationError unless ``data`` is a valid mutation-testing report."""
    # Imported here: jsonschema is an optional dependency (the test extra); writing a report
    # does not need it, only checking one does.
    import jsonschema

    jsonschema.validate(data, schema(), cls=jsonschema.Draft7Validator)


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to the project root when it lies inside it (symlinks resolved or not)."""
    for candidate, base in ((path.absolute(), root.absolute()), (path.resolve(), root.resolve())):
        try:
            return candidate.relative_to(base).as_posix()
        except ValueError:
            continue
    return path.resolve().as_posix()


def _where(mutant) -> tuple[str, str, dict, str | None]:
    """(file key, that file's source, location, replacement) of a mutant in the report."""
    patch = getattr(mutant, "patch", None)
    if patch is not None:
        path, line, column, end_line, end_column = mutant.location()
        source = (PROJECT_ROOT / path).read_text()
        replacement = patch.replacement
    else:  # a mutant that is a file of its own (the planted test doubles)
        path = mutant.path
        source = Path(path).read_text()
        line, column, end_line, end_column = 1, 1, 1, 1
        replacement = None
    key = _relative(Path(path) if Path(path).is_absolute() else PROJECT_ROOT / path, PROJECT_ROOT)
    location = {"start": {"line": line, "column": column}, "end": {"line": end_line, "column": end_column}}
    return key, source, location, replacement


def stryker_report(report: MutationReport) -> dict:
    """The report as a mutation-testing-report (schema version 2) dict."""
    root = PROJECT_ROOT
    files: dict[str, dict] = {}
    for result in report.results:
        mutant = result.mutant
        key, source, location, replacement = _where(mutant)
        entry = {
            "id": mutant.name,
            "mutatorName": mutant.pitfall,
            "description": f"{mutant.name}: {mutant.pitfall} (documented: {mutant.source}; "
                           f"expected check: {mutant.expected_check})",
            "location": location,
            "status": result.status.value,
            "statusReason": result.reason,
            "testsCompleted": result.examples,
            "duration": round(result.seconds * 1000.0, 1),
            "static": False,
        }
        if replacement is not None:
            entry["replacement"] = replacement
        if result.killed_by:
            entry["killedBy"] = list(result.killed_by)
        if result.matrix is not None:
            entry["coveredBy"] = list(result.matrix)
        files.setdefault(key, {"language": "python", "source": source, "mutants": []})
        files[key]["mutants"].append(entry)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": dict(THRESHOLDS),
        "projectRoot": str(root),
        "files": files,
        "testFiles": test_files(),
        "performance": {
            "setup": round(report.setup_seconds * 1000.0, 1),
            "initialRun": round(report.gate_seconds * 1000.0, 1),
            "mutation": round(report.mutation_seconds * 1000.0, 1),
        },
        **environment("lse-fuzz mutants"),
        "config": {
            **report.config,
            "baseline_seconds": round(report.baseline_seconds, 2),
            "timeout_seconds": round(report.timeout_seconds, 2),
            "score": report.score,
            "score_definition": "detected / valid; detected = Killed + Timeout; valid excludes CompileError "
                                "and RuntimeError",
            "gate": [{"label": g.label, "target": g.target, "must": g.must, "ok": g.ok, "status": g.cell.status.value,
                      "check": g.cell.check, "examples": g.cell.examples, "seconds": round(g.cell.wall_seconds, 2)}
                     for g in report.gate],
            "mutants": {
                r.name: {
                    "target": r.mutant.target,
                    "status": r.status.value,
                    "killed_by": r.killed_by,
                    "examples": r.examples,
                    "seconds": round(r.seconds, 3),
                    "wall_seconds": round(r.wall_seconds, 3),
                    "counterexample": r.cell.counterexample,
                    "reproducer": r.cell.reproducer,
                    "replay": r.cell.replay,
                    **({"matrix": {check: cell.status.value for check, cell in r.matrix.items()}}
                       if r.matrix is not None else {}),
                }
                for r in report.results
            },
        },
    }


def environment(framework: str) -> dict:
    """The report's ``framework`` (this tool, its version and dependencies) and ``system`` entries."""
    return {
        "framework": {"name": framework, "version": __version__, "dependencies": _dependencies()},
        "system": {
            "ci": bool(os.environ.get("CI")),
            "os": {"platform": sys.platform, "description": platform.platform()},
            "cpu": {"logicalCores": os.cpu_count() or 1, "model": platform.processor() or platform.machine()},
            "ram": {"total": _ram_megabytes()},
        },
    }


def test_files() -> dict:
    """The checks as the report's tests (``testFiles``)."""
    return {"fuzz/checks/__init__.py": {
        "tests": [{"id": name, "name": f"{name}: {check.summary}"} for name, check in CHECKS.items()]}}


def _dependencies() -> dict[str, str]:
    versions = {}
    for name in ("torch", "triton", "hypothesis"):
        module = sys.modules.get(name)
        if module is None:
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        else:
            versions[name] = str(getattr(module, "__version__", "unknown"))
    return versions


def _ram_megabytes() -> float:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20)
    except (ValueError, OSError, AttributeError):
        return 0.0


# --------------------------------------------------------------------------------------------
# Markdown


def md_cell(text: object) -> str:
    """Text for one cell of a Markdown table: pipes escaped, one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def markdown_summary(report: MutationReport) -> str:
    """A pull-request comment: the score, the gate, one row per mutant, the matrix if any."""
    score = "n/a" if report.score is None else f"{report.score:.1f}%"
    icon = "✅" if report.all_killed else "❌"
    lines = [
        f"## {icon} LSE mutation analysis: score {score}",
        "",
        f"{report.detected} of {report.valid} valid mutants detected "
        f"({', '.join(f'{report.count(s)} {s.value}' for s in MutantStatus if report.count(s))}); "
        f"{report.total_seconds:.0f} s on `{report.config['device']}`, budget {report.config['budget']} "
        f"examples, seed {report.config['seed']}, contract `{report.config['contract']}`.",
        "",
        "Score = detected / valid (Stryker): detected = Killed + Timeout; CompileError and RuntimeError "
        "mutants are not valid. The run fails unless every mutant is Killed.",
        "",
        "**Gate** (before any mutant is scored): " + "; ".join(
            f"{g.label} must {g.must}: {'ok' if g.ok else 'FAILED'}" for g in report.gate)
        + f". Baseline {report.baseline_seconds:.1f} s, timeout {report.timeout_seconds:.0f} s per mutant.",
        "",
        "| mutant | pitfall | status | killed by | examples | seconds | counterexample |",
        "|---|---|---|---|---:|---:|---|",
    ]
    for r in report.results:
        killed = ", ".join(f"`{c}`" for c in r.killed_by) or "—"
        example = r.cell.counterexample or (_first_line(r.reason) if r.status is not MutantStatus.KILLED else "")
        lines.append(f"| `{r.name}` | {md_cell(r.mutant.pitfall)} | {r.status.value} | {killed} | "
                     f"{r.examples} | {r.seconds:.1f} | {md_cell(example)} |")
    if report.matrix:
        lines += ["", "### Kill matrix", "", _matrix_markdown(report)]
    not_killed = [r for r in report.results if r.status is not MutantStatus.KILLED]
    if not_killed:
        lines += ["", "### Not killed", ""]
        for r in not_killed:
            lines += [f"<details><summary><code>{r.name}</code>: {r.status.value}</summary>", "", "```",
                      r.reason.strip()[:4000], "```", "", "</details>"]
    return "\n".join(lines) + "\n"


def _matrix_checks(report: MutationReport) -> list[str]:
    """The checks that have a column: those of the run, in registry order."""
    present = {check for r in report.results if r.matrix for check in r.matrix}
    return [check for check in CHECKS if check in present]


def _matrix_markdown(report: MutationReport) -> str:
    checks = _matrix_checks(report)
    head = "| mutant | " + " | ".join(f"`{c}`" for c in checks) + " | checks |"
    rows = [head, "|---|" + "---|" * len(checks) + "---:|"]
    for r in report.results:
        cells = [_SYMBOL[r.matrix[c].status] if r.matrix and c in r.matrix else " " for c in checks]
        rows.append(f"| `{r.name}` | " + " | ".join(cells) + f" | {len(r.killed_by)} |")
    weight = [sum(1 for r in report.results if r.matrix and c in r.matrix
                  and r.matrix[c].status is MutantStatus.KILLED) for c in checks]
    rows.append("| **mutants killed** | " + " | ".join(str(w) for w in weight) + " | |")
    only = [f"`{r.name}` (only `{r.killed_by[0]}`)" for r in report.results if len(r.killed_by) == 1]
    text = "\n".join(rows) + "\n\nK killed, - survived, T timeout, E runtime error, C compile error."
    if only:
        text += "\n\nCaught by a single check: " + ", ".join(only) + "."
    return text


# --------------------------------------------------------------------------------------------
# Terminal


_STYLE = {
    MutantStatus.KILLED: "green",
    MutantStatus.SURVIVED: "bold red",
    MutantStatus.TIMEOUT: "yellow",
    MutantStatus.RUNTIME_ERROR: "magenta",
    MutantStatus.COMPILE_ERROR: "magenta",
    MutantStatus.NO_COVERAGE: "bold yellow",
}


def rich_tables(report: MutationReport) -> list:
    """The per-mutant table (and the kill matrix in a matrix run) as rich renderables."""
    table = Table(title=f"Mutation analysis: {report.summary()}", title_justify="left")
    for name, style in (("mutant", "bold"), ("status", ""), ("killed by", ""), ("examples", ""), ("seconds", ""),
                        ("counterexample / reason", "dim")):
        table.add_column(name, style=style or None, justify="right" if name in ("examples", "seconds") else "left",
                         overflow="fold", no_wrap=name != "counterexample / reason")
    for r in report.results:
        detail = r.cell.counterexample if r.status is MutantStatus.KILLED else _first_line(r.reason)
        table.add_row(r.name, f"[{_STYLE[r.status]}]{r.status.value}[/]", ", ".join(r.killed_by),
                      str(r.examples), f"{r.seconds:.1f}", detail or "")
    tables = [table]
    if report.matrix:
        checks = _matrix_checks(report)
        matrix = Table(title="Kill matrix (each check alone)", title_justify="left")
        matrix.add_column("mutant", style="bold", no_wrap=True)
        for check in checks:
            matrix.add_column(check.replace("_", "\n"), justify="center")
        matrix.add_column("checks", justify="right")
        for r in report.results:
            cells = []
            for check in checks:
                cell = r.matrix.get(check) if r.matrix else None
                cells.append("" if cell is None else f"[{_STYLE[cell.status]}]{_SYMBOL[cell.status]}[/]")
            count = len(r.killed_by)
            matrix.add_row(r.name, *cells, f"[{'bold red' if count <= 1 else 'green'}]{count}[/]")
        weight = [sum(1 for r in report.results if r.matrix and check in r.matrix
                      and r.matrix[check].status is MutantStatus.KILLED) for check in checks]
        matrix.add_row("[bold]mutants killed[/]", *(str(w) for w in weight), "")
        tables.append(matrix)
    return tables


def write_reports(report: MutationReport, out_dir: Path | str) -> dict[str, Path]:
    """Write mutation.json (Stryker schema) and mutation.md into ``out_dir``; return the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "mutation.json", "markdown": out_dir / "mutation.md"}
    paths["json"].write_text(json.dumps(stryker_report(report), indent=2) + "\n")
    paths["markdown"].write_text(markdown_summary(report))
    return paths
