"""Mutation analysis of any Triton LSE kernel (``lse-fuzz mutate``).

* :mod:`.operators`: the kernel-aware operators (:data:`OPERATORS`), each the pitfall it models;
* :mod:`.sites`: discovery (the kernels and the launcher a TARGET runs) and the mutants in them;
* :mod:`.loading`: the files a worker loads a mutant, the coverage run and the broken double from;
* :mod:`.runner`: :func:`run_mutate`, the gate, every mutant and the user's tests on the worker pool;
* :mod:`.tests_job`: the user's test command against one mutant, in an overlay of the project;
* :mod:`.cache`: verdicts kept between runs;
* :mod:`.report`: Stryker JSON, Markdown, and the HTML report (:mod:`.html`).
"""

from __future__ import annotations

from .operators import OPERATORS, Operator
from .runner import DEFAULT_BUDGET, MutateReport, TestsVerdict, run_mutate
from .sites import Kernel, Mutant, discover, generate

__all__ = ["DEFAULT_BUDGET", "OPERATORS", "Kernel", "MutateReport", "Mutant", "Operator", "TestsVerdict", "discover",
           "generate", "run_mutate"]
