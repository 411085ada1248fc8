"""Mutation analysis of the bundled mutants (``lse-fuzz mutants``).

* :mod:`.analysis`: :func:`run_mutation_analysis`, the gate and every mutant on the worker pool;
* :mod:`.results`: what it found (:class:`MutationReport`, :class:`GateFailure`);
* :mod:`.report`: Stryker JSON, Markdown and terminal tables (:func:`write_reports`);
* :mod:`.gate`: the deliberately broken double the gate must catch.
"""

from __future__ import annotations

from .analysis import DEFAULT_BUDGET, DEFAULT_OUT_DIR, GATE_BROKEN, GATE_CORRECT, run_mutation_analysis
from .report import markdown_summary, rich_tables, stryker_report, validate_report, write_reports
from .results import Cell, GateFailure, GateResult, MutantResult, MutationReport

__all__ = ["DEFAULT_BUDGET", "DEFAULT_OUT_DIR", "GATE_BROKEN", "GATE_CORRECT", "Cell", "GateFailure", "GateResult",
           "MutantResult", "MutationReport", "markdown_summary", "rich_tables", "run_mutation_analysis",
           "stryker_report", "validate_report", "write_reports"]
