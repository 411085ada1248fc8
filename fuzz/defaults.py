"""Default values of the options, in one light module: the CLI's help text and the code that applies
them read the same numbers, and ``lse-fuzz --help`` imports nothing heavy to print them."""

from __future__ import annotations

CHECK_BUDGET = 200
"""Examples per fuzz run of ``lse_fuzz.check``, ``lse-fuzz check`` and ``grade``."""

CALL_TIMEOUT = 60.0
"""Seconds one call of an isolated implementation may take before it counts as a hang."""

GRADE_TIMEOUT = 900.0
"""Seconds one candidate of ``lse-fuzz grade`` may take in all."""

MUTANT_BUDGET = 250
"""Examples per mutant of ``lse-fuzz mutants`` and ``mutate`` (a killed mutant stops at its first failure)."""

MUTANT_SHRINK_SECONDS = 2.0
"""Seconds a killed mutant's failure is shrunk (``check`` shrinks for 10): the kill needs only the
first failure, and the mutation report shows a counterexample shrunk this far. With 10 s, most of a
cold ``lse-fuzz mutants`` went to shrinking: 88 s on a 2-core CPU, killed mutants 10-15 s each."""

MUTANT_TIMEOUT_FACTOR = 3.0
MUTANT_TIMEOUT_FLOOR = 30.0
"""A mutant is stopped after max(factor * the gate's slowest correct run, floor) seconds."""

OUT_DIR = "lse-fuzz-report"
"""Where ``mutants`` and ``grade`` write their reports."""

REPRODUCER_DIR = ".lse-fuzz"
"""Where failing examples are saved."""

COMPILE_TIMEOUT = 1800.0
"""Seconds one call of an isolated implementation may spend compiling (Triton's JIT, autotuning's
benchmarks, torch.compile): time that never counts toward the call's deadline. A whole-row kernel
over a 2**19-lane block compiles for a minute or more on an H200; past this, the compiler is hung."""

OP_RUN_TIMEOUT = GRADE_TIMEOUT
"""Seconds a run of ``lse-fuzz check --op merge_state|combine`` may take in all unless
``--worker-timeout`` says otherwise: its child process runs the calls, with no deadline per call."""
