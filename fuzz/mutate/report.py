"""Reports of ``lse-fuzz mutate``: Stryker JSON, Markdown for a pull request, the HTML report.

The JSON follows the mutation-testing-report schema the bundled analysis uses (validated by
:func:`fuzz.mutation.validate_report`): one ``files`` entry per kernel file with its full source;
each mutant's ``location`` is the exact span its operator rewrote and ``replacement`` the text
put there; ``mutatorName`` is the operator; ``status`` is the fuzzer's verdict (after the thorough
re-run for a survivor); ``killedBy`` names the check that killed it, and ``your-tests`` when the
``--tests`` command failed on it. The HTML report (:mod:`.html`) shows that same JSON with the
``mutation-testing-elements`` web component, each mutant on the kernel's source.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from ..mutation.report import (SCHEMA_VERSION, THRESHOLDS, environment, md_cell, rich_tables, test_files)
from ..outcomes import MutantStatus
from .html import html_report
from .runner import MutateReport

__all__ = ["YOUR_TESTS", "budgets", "markdown_report", "rich_tables", "stryker_report", "write_reports"]

YOUR_TESTS = "your-tests"
"""The test id of the ``--tests`` command in ``killedBy``."""

LOOK_HERE = "look here: a real gap, or an equivalent mutant"
RETRIED = ("its first run timed out, so it was run once more with a longer limit (fuzz.mutate.runner.RETRY_FACTOR); "
           "this is the verdict of that second run")


def stryker_report(report: MutateReport) -> dict:
    """The report as a mutation-testing-report dict (schema version 2)."""
    kernel = report.kernel
    files: dict[str, dict] = {}
    for key in kernel.sources:
        files[key] = {"language": "python", "source": kernel.sources[key], "mutants": []}
    for result in report.results:
        mutant = result.mutant
        tests = (report.tests or {}).get(mutant.name)
        killed_by = [result.cell.check] if result.status is MutantStatus.KILLED and result.cell.check else []
        if tests is not None and tests.status.detected:
            killed_by.append(YOUR_TESTS)
        thorough = " (after the thorough re-run)" if mutant.name in report.thorough else ""
        reason = result.reason
        if mutant.name in report.retried:
            reason = f"{reason}\n{RETRIED}"
        if result.status is MutantStatus.SURVIVED:
            reason = f"{LOOK_HERE}{thorough}. {reason}"
        if tests is not None:
            reason += f"\nyour tests: {tests.status.value} (exit {tests.exit}, {tests.seconds:.1f} s)"
        entry = {
            "id": mutant.name,
            "mutatorName": mutant.operator,
            "description": f"{mutant.pitfall} (documented: {mutant.source}); in {mutant.function}"
                           f"{' (kernel)' if mutant.kernel else ' (launcher)'}",
            "location": {"start": {"line": mutant.line, "column": mutant.column},
                         "end": {"line": mutant.end_line, "column": mutant.end_column}},
            "replacement": mutant.replacement,
            "status": result.status.value,
            "statusReason": reason,
            "testsCompleted": result.examples,
            "duration": round(result.seconds * 1000.0, 1),
            "static": False,
        }
        if killed_by:
            entry["killedBy"] = killed_by
        files[mutant.file]["mutants"].append(entry)
    tested = test_files()
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
        **environment("lse-fuzz mutate"),
        "config": {
            **report.config,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "score": report.score,
            "score_definition": "detected / valid; detected = Killed + Timeout; valid excludes CompileError "
                                "and RuntimeError (NoCoverage counts as valid and not detected)",
            "reused_verdicts": report.reused,
            "judged_verdicts": report.judged,
            "thorough": sorted(report.thorough),
            "retried_after_timeout": sorted(report.retried),
            "gate": [{"label": g.label, "must": g.must, "ok": g.ok, "status": g.cell.status.value,
                      "examples": g.cell.examples, "seconds": round(g.cell.wall_seconds, 2)} for g in report.gate],
            "your_tests": None if report.tests is None else {
                name: {"status": v.status.value, "exit": v.exit, "seconds": v.seconds}
                for name, v in report.tests.items()},
        },
    }


def _counts(report: MutateReport) -> str:
    return ", ".join(f"{report.count(s)} {s.value}" for s in MutantStatus if report.count(s))


def _functions(entries: list[str]) -> str:
    return ", ".join("`" + entry.rpartition(":")[2] + "`" for entry in entries)


def budgets(report: MutateReport) -> str:
    """The examples a verdict rests on and where the device scaled them, e.g. 'budget 100 examples per
    mutant, shapes up to 65536 elements; survivors again with `lse-thorough`, 300 examples (the CPU
    default, ...)'."""
    config = report.config
    thorough = config["thorough_budget"]
    line = (f"budget {config['budget']} examples per mutant, shapes up to {config['max_elements_drawn']} elements"
            f"{'' if config['max_elements'] else ' (the device default)'}; ")
    if not thorough:
        return line + "survivors not run again (--thorough-budget 0)"
    return line + f"survivors again with `lse-thorough`, {thorough} examples ({config['thorough_budget_source']})"


def headline(report: MutateReport) -> str:
    """'lse-fuzz kills 30 of 31; your tests kill 9 of 31' (the side-by-side line)."""
    total = len(report.results)
    line = f"lse-fuzz kills {report.detected} of {total}"
    if report.tests is not None:
        line = f"your tests kill {report.tests_killed()} of {total}; {line}"
    return line


def markdown_report(report: MutateReport) -> str:
    """A pull-request comment: the headline, one row per mutant, every survivor with its diff."""
    score = "n/a" if report.score is None else f"{report.score:.1f}%"
    config = report.config
    lines = [
        f"## lse-fuzz mutate `{md_cell(report.command)}`: score {score}",
        "",
        f"**{headline(report)}** ({_counts(report)}).",
        "",
        f"Device `{config['device']}`; {budgets(report)}; seed {config['seed']}; contract "
        f"{config['declared_contract']}; {report.total_seconds:.0f} s; {report.reused} verdicts reused from "
        f"the cache, {report.judged} judged.",
        "",
        f"Kernels: {_functions(config['kernels'])}; launcher: {_functions(config['launcher'])}.",
        "",
        "| mutant | operator | line | status | killed by | examples |" + (" your tests |" if report.tests else ""),
        "|---|---|---:|---|---|---:|" + ("---|" if report.tests else ""),
    ]
    for r in report.results:
        m = r.mutant
        killed = f"`{r.cell.check}`" if r.status is MutantStatus.KILLED and r.cell.check else "—"
        status = (r.status.value + (" (thorough)" if m.name in report.thorough else "")
                  + (" (run again after a timeout)" if m.name in report.retried else ""))
        row = (f"| `{md_cell(m.name)}` | {m.operator} | {m.line} | {status} | {killed} | {r.examples} |")
        if report.tests is not None:
            verdict = report.tests.get(m.name)
            row += f" {verdict.status.value if verdict else '—'} |"
        lines.append(row)
    survivors = [r for r in report.results if r.status is MutantStatus.SURVIVED]
    if survivors:
        lines += ["", f"### Survivors: {LOOK_HERE}", ""]
        for r in survivors:
            lines += [f"**`{md_cell(r.name)}`**: {md_cell(r.mutant.pitfall)}", "", "```diff",
                      r.mutant.diff().rstrip(), "```", ""]
    missed = [r for r in report.results if r.status is MutantStatus.NO_COVERAGE]
    if missed:
        lines += ["", "### NoCoverage: the mutated line never ran on any generated input", ""]
        lines += [f"* `{md_cell(r.name)}` ({r.mutant.function}, line {r.mutant.line}): "
                  f"`{md_cell(r.mutant.original.strip())}` -> `{md_cell(r.mutant.replacement.strip())}`"
                  for r in missed]
    return "\n".join(lines) + "\n"


def write_reports(report: MutateReport, out_dir: Path | str) -> dict[str, Path]:
    """mutation.json (Stryker), mutation.md and mutation.html in ``out_dir``; the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = stryker_report(report)
    paths = {"json": out_dir / "mutation.json", "markdown": out_dir / "mutation.md",
             "html": out_dir / "mutation.html"}
    paths["json"].write_text(json.dumps(data, indent=2) + "\n")
    paths["markdown"].write_text(markdown_report(report))
    paths["html"].write_text(html_report(data, title=f"lse-fuzz mutate {report.command}"))
    return paths
