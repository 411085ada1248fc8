"""The reports of a mutation run: Stryker JSON, Markdown for a pull request, an HTML page, terminal tables.

The JSON follows the mutation-testing-report schema (``fuzz/schemas/``, version 3.8.4 of the npm
package ``mutation-testing-report-schema``, Apache-2.0), so any tool that reads Stryker reports
reads it. Mapping:

* ``files``: one entry per file of the kernel, with its full source; each mutant's ``location`` is
  the exact span its edit changes and ``replacement`` the text put there;
* ``mutatorName``: the operator (a bundled mutant's own name); ``description``: the pitfall, where
  it is documented, the function it lies in and the check expected to kill it, if any;
* ``status``: :class:`fuzz.outcomes.MutantStatus` (Stryker's names), after the thorough re-run for a
  survivor; ``statusReason``: the failure message of the killing check (counterexample, expected vs
  got, replay command), or the crash, timeout or compile error; a survivor's starts "look here";
* ``killedBy``: the check that killed it (every killing check in a matrix run), and ``your-tests``
  when the ``--tests`` command failed on it; the checks are the "tests", under ``testFiles``;
* ``testsCompleted``: examples run; ``duration``: milliseconds of checking.

The HTML report is that JSON shown by the ``mutation-testing-elements`` web component (the viewer
Stryker ships; Apache-2.0, its license beside it in ``assets/``), inlined: one file that opens offline.
"""

from __future__ import annotations

import html
import json
import os
import platform
import sys
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from rich.table import Table

from .._version import __version__
from ..checks import CHECKS
from ..outcomes import MutantStatus
from .results import ExitRule, MutantResult, MutationReport

__all__ = ["ELEMENTS_VERSION", "LOOK_HERE", "SCHEMA_PATH", "YOUR_TESTS", "budgets", "headline", "html_report",
           "markdown_report", "rich_tables", "schema", "stryker_report", "validate_report", "write_reports"]

SCHEMA_PATH = Path(__file__).parents[1] / "schemas" / "mutation-testing-report-schema.json"
ELEMENTS_SCRIPT = Path(__file__).parent / "assets" / "mutation-test-elements.js"
ELEMENTS_VERSION = "3.9.0"
"""The npm package mutation-testing-elements whose browser bundle is shipped (pinned)."""
SCHEMA_VERSION = "2"  # the report format's own version (the schema accepts 1.x and 2.x)
THRESHOLDS = {"high": 100, "low": 90}
YOUR_TESTS = "your-tests"
"""The test id of the ``--tests`` command in ``killedBy``."""
LOOK_HERE = "look here: a real gap, or an equivalent mutant"
RETRIED = ("its first run timed out, so it was run once more with a longer limit (fuzz.mutation.judge.RETRY_FACTOR); "
           "this is the verdict of that second run")
_SYMBOL = {MutantStatus.KILLED: "K", MutantStatus.SURVIVED: "-", MutantStatus.TIMEOUT: "T",
           MutantStatus.RUNTIME_ERROR: "E", MutantStatus.COMPILE_ERROR: "C", MutantStatus.NO_COVERAGE: "N",
           MutantStatus.IGNORED: "I"}
_STYLE = {MutantStatus.KILLED: "green", MutantStatus.SURVIVED: "bold red", MutantStatus.TIMEOUT: "yellow",
          MutantStatus.RUNTIME_ERROR: "magenta", MutantStatus.COMPILE_ERROR: "magenta",
          MutantStatus.NO_COVERAGE: "bold yellow", MutantStatus.IGNORED: "blue"}


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def validate_report(data: dict) -> None:
    """Raise jsonschema.ValidationError unless ``data`` is a valid mutation-testing report."""
    # Imported here: jsonschema is an optional dependency (the test extra); writing a report
    # does not need it, only checking one does.
    import jsonschema

    jsonschema.validate(data, schema(), cls=jsonschema.Draft7Validator)


# --------------------------------------------------------------------------------------------
# Stryker JSON


def _killed_by(report: MutationReport, result: MutantResult) -> list[str]:
    killed = list(result.killed_by)
    tests = (report.tests or {}).get(result.name)
    if tests is not None and tests.status.detected:
        killed.append(YOUR_TESTS)
    return killed


def _reason(report: MutationReport, result: MutantResult) -> str:
    name, reason = result.name, result.reason
    if name in report.retried:
        reason = f"{reason}\n{RETRIED}"
    if result.status is MutantStatus.SURVIVED:
        reason = f"{LOOK_HERE}{' (after the thorough re-run)' if name in report.thorough else ''}. {reason}"
    tests = (report.tests or {}).get(name)
    if tests is not None:
        reason += f"\nyour tests: {tests.status.value} (exit {tests.exit}, {tests.seconds:.1f} s)"
    return reason


def _entry(report: MutationReport, result: MutantResult) -> dict:
    mutant = result.mutant
    _, line, column, end_line, end_column = mutant.location()
    where = f"; in {mutant.function} ({'kernel' if mutant.kernel else 'launcher'})" if mutant.function else ""
    expected = f"; expected check: {mutant.expected_check}" if mutant.expected_check else ""
    entry = {
        "id": mutant.name,
        "mutatorName": mutant.operator,
        "description": f"{mutant.pitfall} (documented: {mutant.documented}){where}{expected}",
        "location": {"start": {"line": line, "column": column}, "end": {"line": end_line, "column": end_column}},
        "replacement": mutant.replacement,
        "status": result.status.value,
        "statusReason": _reason(report, result),
        "testsCompleted": result.cell.examples,
        "duration": round(result.cell.seconds * 1000.0, 1),
        "static": False,
    }
    killed = _killed_by(report, result)
    if killed:
        entry["killedBy"] = killed
    if result.matrix is not None:
        entry["coveredBy"] = list(result.matrix)
    return entry


def stryker_report(report: MutationReport) -> dict:
    """The report as a mutation-testing-report (schema version 2) dict."""
    files = {key: {"language": "python", "source": text, "mutants": []} for key, text in report.kernel.sources.items()}
    for result in report.results:
        files[result.mutant.file]["mutants"].append(_entry(report, result))
    tested = {"fuzz/checks/__init__.py": {
        "tests": [{"id": name, "name": f"{name}: {check.summary}"} for name, check in CHECKS.items()]}}
    if report.tests is not None:
        tested[YOUR_TESTS] = {"tests": [{"id": YOUR_TESTS, "name": f"your tests: {report.config['tests']}"}]}
    return {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": dict(THRESHOLDS),
        "projectRoot": str(Path.cwd()),
        "files": files,
        "testFiles": tested,
        "performance": {"setup": round(report.setup_seconds * 1000.0, 1),
                        "initialRun": round(report.gate_seconds * 1000.0, 1),
                        "mutation": round(report.mutation_seconds * 1000.0, 1)},
        **_environment(),
        "config": {
            **report.config,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "baseline_seconds": round(report.baseline_seconds, 2),
            "timeout_seconds": round(report.timeout_seconds, 2),
            "score": report.score,
            "score_definition": "detected / valid; detected = Killed + Timeout; valid excludes CompileError "
                                "and RuntimeError (NoCoverage counts as valid and not detected)",
            "exit_rule": report.exit_rule.value,
            "reused_verdicts": report.reused,
            "judged_verdicts": report.judged,
            "thorough": sorted(report.thorough),
            "retried_after_timeout": sorted(report.retried),
            "gate": [{"label": g.label, "target": g.target, "must": g.must, "ok": g.ok, "status": g.cell.status.value,
                      "examples": g.cell.examples, "seconds": round(g.cell.wall_seconds, 2)} for g in report.gate],
            "mutants": {r.name: {"target": r.mutant.target, "status": r.status.value, "killed_by": r.killed_by,
                                 "expected_check": r.mutant.expected_check or None, "examples": r.cell.examples,
                                 "seconds": round(r.cell.seconds, 3), "counterexample": r.cell.counterexample,
                                 "reproducer": r.cell.reproducer, "replay": r.cell.replay,
                                 **({"matrix": {c: cell.status.value for c, cell in r.matrix.items()}}
                                    if r.matrix is not None else {})}
                        for r in report.results},
            "your_tests": None if report.tests is None else {
                name: {"status": v.status.value, "exit": v.exit, "seconds": v.seconds}
                for name, v in report.tests.items()},
        },
    }


def _environment() -> dict:
    """The report's ``framework`` (this tool, its version and dependencies) and ``system`` entries."""
    versions = {}
    for name in ("torch", "triton", "hypothesis"):
        module = sys.modules.get(name)
        try:
            versions[name] = str(getattr(module, "__version__", "unknown")) if module else metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    try:
        ram = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20)
    except (ValueError, OSError, AttributeError):
        ram = 0.0
    return {"framework": {"name": "lse-fuzz", "version": __version__, "dependencies": versions},
            "system": {"ci": bool(os.environ.get("CI")),
                       "os": {"platform": sys.platform, "description": platform.platform()},
                       "cpu": {"logicalCores": os.cpu_count() or 1, "model": platform.processor() or platform.machine()},
                       "ram": {"total": ram}}}


# --------------------------------------------------------------------------------------------
# Markdown


def md_cell(text: object) -> str:
    """Text for one cell of a Markdown table: pipes escaped, one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _counts(report: MutationReport) -> str:
    return ", ".join(f"{report.count(s)} {s.value}" for s in MutantStatus if report.count(s))


def budgets(report: MutationReport) -> str:
    """The examples a verdict rests on and where the device scaled them, e.g. 'budget 250 examples per
    mutant, shapes up to 65536 elements; survivors again with `lse-thorough`, 300 examples (...)'."""
    config = report.config
    line = (f"budget {config['budget']} examples per mutant, shapes up to {config['max_elements_drawn']} elements"
            f"{'' if config['max_elements'] else ' (the device default)'}; ")
    if not config["thorough_budget"]:
        return line + f"survivors not run again ({'a kill matrix' if report.matrix else '--thorough-budget 0'})"
    return line + (f"survivors again with `lse-thorough`, {config['thorough_budget']} examples "
                   f"({config['thorough_budget_source']})")


def headline(report: MutationReport) -> str:
    """'lse-fuzz kills 30 of 31; your tests kill 9 of 31' (the side-by-side line)."""
    total = len(report.results)
    line = f"lse-fuzz kills {report.detected} of {total}"
    if report.tests is not None:
        line = f"your tests kill {report.tests_killed()} of {total}; {line}"
    return line


def markdown_report(report: MutationReport) -> str:
    """A pull-request comment: the score, the gate, one row per mutant, every survivor with its diff,
    the uncovered ones, the kill matrix and the reason of every mutant not killed."""
    score = "n/a" if report.score is None else f"{report.score:.1f}%"
    config = report.config
    icon = "✅" if report.exit_code == 0 else "❌"
    rule = ("The run fails unless every mutant is Killed." if report.exit_rule is ExitRule.ALL_KILLED
            else f"The run fails below a score of {report.fail_under:g}%." if report.fail_under is not None else "")
    lines = [
        f"## {icon} lse-fuzz mutation analysis of `{md_cell(report.command)}`: score {score}", "",
        f"**{headline(report)}** ({_counts(report)}).", "",
        f"Device `{config['device']}`; {budgets(report)}; seed {config['seed']}; contract "
        f"{config['declared_contract']}; {report.total_seconds:.0f} s; {report.reused} verdicts reused from "
        f"the cache, {report.judged} judged.", "",
        f"Score = detected / valid (Stryker): detected = Killed + Timeout; CompileError, RuntimeError and Ignored "
        f"(unsupported on the CPU) mutants are not valid. {rule}", "",
        "**Gate** (before any mutant is scored): " + "; ".join(
            f"{g.label} must {g.must}: {'ok' if g.ok else 'FAILED'}" for g in report.gate)
        + f". Baseline {report.baseline_seconds:.1f} s, timeout {report.timeout_seconds:.0f} s per mutant.", "",
        "| mutant | pitfall | line | status | killed by | examples |" + (" your tests |" if report.tests else ""),
        "|---|---|---:|---|---|---:|" + ("---|" if report.tests else ""),
    ]
    for r in report.results:
        killed = ", ".join(f"`{c}`" for c in r.killed_by) or "—"
        status = (r.status.value + (" (thorough)" if r.name in report.thorough else "")
                  + (" (run again after a timeout)" if r.name in report.retried else ""))
        row = (f"| `{md_cell(r.name)}` | {md_cell(r.mutant.pitfall)} | {r.mutant.line} | {status} | {killed} | "
               f"{r.cell.examples} |")
        if report.tests is not None:
            verdict = report.tests.get(r.name)
            row += f" {verdict.status.value if verdict else '—'} |"
        lines.append(row)
    lines += _markdown_sections(report)
    return "\n".join(lines) + "\n"


def _markdown_sections(report: MutationReport) -> list[str]:
    lines = []
    if report.survivors:
        lines += ["", f"### Survivors: {LOOK_HERE}", ""]
        for r in report.survivors:
            lines += [f"**`{md_cell(r.name)}`**: {md_cell(r.mutant.pitfall)}", "", "```diff",
                      r.mutant.diff().rstrip(), "```", ""]
    missed = [r for r in report.results if r.status is MutantStatus.NO_COVERAGE]
    if missed:
        lines += ["", "### NoCoverage: the mutated line never ran on any generated input", ""]
        lines += [f"* `{md_cell(r.name)}` ({r.mutant.function}, line {r.mutant.line}): "
                  f"`{md_cell(r.mutant.original.strip())}` -> `{md_cell(r.mutant.replacement.strip())}`"
                  for r in missed]
    if report.matrix:
        lines += ["", "### Kill matrix", "", _matrix_markdown(report)]
    ignored = [r for r in report.results if r.status is MutantStatus.IGNORED]
    if ignored:
        lines += ["", "### Ignored: the CPU cannot run a construct the mutant's kernel uses (unsupported; run with "
                      "`--device cuda`)", ""]
        lines += [f"* `{md_cell(r.name)}`: {md_cell(r.reason.splitlines()[0])}" for r in ignored]
    failed = [r for r in report.results if r.status not in (MutantStatus.KILLED, MutantStatus.SURVIVED,
                                                            MutantStatus.NO_COVERAGE, MutantStatus.IGNORED)]
    if failed:
        lines += ["", "### Timeouts and errors", ""]
        for r in failed:
            lines += [f"<details><summary><code>{r.name}</code>: {r.status.value}</summary>", "", "```",
                      r.reason.strip()[:4000], "```", "", "</details>"]
    return lines


def _matrix_checks(report: MutationReport) -> list[str]:
    """The checks that have a column: those of the run, in registry order."""
    present = {check for r in report.results if r.matrix for check in r.matrix}
    return [check for check in CHECKS if check in present]


def _weights(report: MutationReport, checks: list[str]) -> list[int]:
    return [sum(1 for r in report.results if r.matrix and c in r.matrix and r.matrix[c].status is MutantStatus.KILLED)
            for c in checks]


def _matrix_markdown(report: MutationReport) -> str:
    checks = _matrix_checks(report)
    rows = ["| mutant | " + " | ".join(f"`{c}`" for c in checks) + " | checks |", "|---|" + "---|" * len(checks) + "---:|"]
    for r in report.results:
        cells = [_SYMBOL[r.matrix[c].status] if r.matrix and c in r.matrix else " " for c in checks]
        rows.append(f"| `{r.name}` | " + " | ".join(cells) + f" | {len(r.killed_by)} |")
    rows.append("| **mutants killed** | " + " | ".join(str(w) for w in _weights(report, checks)) + " | |")
    only = [f"`{r.name}` (only `{r.killed_by[0]}`)" for r in report.results if len(r.killed_by) == 1]
    text = "\n".join(rows) + "\n\nK killed, - survived, T timeout, E runtime error, C compile error, N no coverage."
    return text + ("\n\nCaught by a single check: " + ", ".join(only) + "." if only else "")


# --------------------------------------------------------------------------------------------
# Terminal


def _symbol(cell) -> str:
    return "" if cell is None else f"[{_STYLE[cell.status]}]{_SYMBOL[cell.status]}[/]"


def rich_tables(report: MutationReport) -> list:
    """The per-mutant table (and the kill matrix in a matrix run) as rich renderables."""
    table = Table(title=f"Mutation analysis: {report.summary()}", title_justify="left")
    for name in ("mutant", "status", "killed by", "examples", "seconds", "counterexample / reason"):
        table.add_column(name, style="bold" if name == "mutant" else "dim" if name.startswith("counter") else None,
                         justify="right" if name in ("examples", "seconds") else "left", overflow="fold",
                         no_wrap=name != "counterexample / reason")
    for r in report.results:
        detail = r.cell.counterexample if r.status is MutantStatus.KILLED else _first_line(r.reason)
        table.add_row(r.name, f"[{_STYLE[r.status]}]{r.status.value}[/]", ", ".join(_killed_by(report, r)),
                      str(r.cell.examples), f"{r.cell.seconds:.1f}", detail or "")
    if not report.matrix:
        return [table]
    checks = _matrix_checks(report)
    matrix = Table(title="Kill matrix (each check alone)", title_justify="left")
    matrix.add_column("mutant", style="bold", no_wrap=True)
    for check in checks:
        matrix.add_column(check.replace("_", "\n"), justify="center")
    matrix.add_column("checks", justify="right")
    for r in report.results:
        cells = [_symbol(r.matrix.get(check) if r.matrix else None) for check in checks]
        matrix.add_row(r.name, *cells, f"[{'bold red' if len(r.killed_by) <= 1 else 'green'}]{len(r.killed_by)}[/]")
    matrix.add_row("[bold]mutants killed[/]", *(str(w) for w in _weights(report, checks)), "")
    return [table, matrix]


# --------------------------------------------------------------------------------------------
# HTML, and writing them all


def html_report(data: dict, *, title: str = "lse-fuzz mutation analysis") -> str:
    """The page for a mutation-testing-report dict: the web component's bundle and the report inlined."""
    script = ELEMENTS_SCRIPT.read_text(encoding="utf-8")
    # The bundle is inlined as is (escaping code would change its regular expressions): it must not
    # hold a closing script tag, which a test checks for the shipped version. The JSON cannot close
    # its element either (``<\\/`` is ``</`` in a JSON string).
    assert "</script" not in script.lower(), "the web component bundle cannot be inlined"
    report = json.dumps(data).replace("</", "<\\/").replace("<!--", "<\\u0021--")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<script>{script}</script>
</head>
<body>
<mutation-test-report-app title-postfix="{html.escape(title, quote=True)}">
  Your browser does not run the report's script (JavaScript is off?); mutation.json and mutation.md hold the same
  results.
</mutation-test-report-app>
<script>
  document.querySelector("mutation-test-report-app").report = {report};
</script>
</body>
</html>
"""


def write_reports(report: MutationReport, out_dir: Path | str) -> dict[str, Path]:
    """mutation.json (Stryker), mutation.md and mutation.html in ``out_dir``; the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = stryker_report(report)
    paths = {"json": out_dir / "mutation.json", "markdown": out_dir / "mutation.md", "html": out_dir / "mutation.html"}
    paths["json"].write_text(json.dumps(data, indent=2) + "\n")
    paths["markdown"].write_text(markdown_report(report))
    paths["html"].write_text(html_report(data, title=f"lse-fuzz mutation analysis of {report.command}"))
    return paths
