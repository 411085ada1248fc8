"""Mutation analysis, one engine: does the fuzzer (and do your tests) notice each mutant of a kernel?

A mutant is a patch (:mod:`.patch`, :class:`Mutant`). Two sources make them: the kernel-aware
operators applied at every site of the kernels a TARGET reaches (:mod:`.operators`, :mod:`.sites`;
``lse-fuzz mutate``) and the bundled catalog, the files of ``mutants/`` (:mod:`.bundled`;
``lse-fuzz mutants``). One runner judges them (:mod:`.runner`, :mod:`.judge`: the gate, coverage,
the cache, timeouts run again, survivors re-run thoroughly, your ``--tests``), and one writer reports
them (:mod:`.report`: Stryker JSON, Markdown, HTML, terminal tables).

    from fuzz.mutation import run_mutation, write_reports
    report = run_mutation(source="catalog", exit_rule="all-killed")   # lse-fuzz mutants
    report = run_mutation("path/to/kernel.py:lse")                    # lse-fuzz mutate
    write_reports(report, "lse-fuzz-report")

Names are imported on first use: a worker that loads a patched kernel (:func:`.patch.load`) does
not import the runner and its dependencies.
"""

from __future__ import annotations

from .._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "Mutant": ".mutant",
    "Patch": ".patch",
    "PatchError": ".patch",
    "OPERATORS": ".operators",
    "Operator": ".operators",
    "Kernel": ".sites",
    "discover": ".sites",
    "generate": ".sites",
    "catalog": ".bundled",
    "minimal_input": ".bundled",
    "run_mutation": ".runner",
    "mutation_options": ".runner",
    "DEFAULT_BUDGET": ".runner",
    "ExitRule": ".results",
    "GateFailure": ".results",
    "MutationReport": ".results",
    "MutantResult": ".results",
    "write_reports": ".report",
    "validate_report": ".report",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
