"""Correctness fuzzing for row-wise LogSumExp implementations.

    import fuzz
    result = fuzz.check(my_lse, budget=200, seed=0)
    print(result.summary())                  # which check, which row, expected vs got, replay command
    fuzz.replay(result.reproducer, my_lse)   # the saved counterexample, once more

Strategies for your own Hypothesis tests live in :mod:`fuzz.strategies`; the checks and their
registry in :mod:`fuzz.checks`. Names are imported on first use, so ``python -m fuzz --help``
does not pay for torch, triton and Hypothesis.
"""

from __future__ import annotations

from ._lazy import lazy_exports as _lazy_exports

__distribution__ = "lse-fuzz"  # read by lse_fuzz: a package of another distribution under this name lacks it

_EXPORTS = {
    "CHECKS": ".checks",
    "METAMORPHIC": ".checks",
    "Check": ".checks",
    "Plan": ".checks",
    "run_checks": ".checks",
    "CheckFailure": ".failures",
    "ImplError": ".failures",
    "Layout": ".layouts",
    "LayoutKind": ".layouts",
    "ImplLost": ".outcomes",
    "MutantStatus": ".outcomes",
    "Status": ".outcomes",
    "Verdict": ".outcomes",
    "PROFILES": ".profiles",
    "CheckResult": ".runner",
    "check": ".runner",
    "replay": ".runner",
    "RECIPES": ".strategies",
    "Contract": ".strategies",
    "CallConvention": ".calls",
    "ConventionError": ".calls",
    "LseInput": ".strategies",
    "RowSpec": ".strategies",
    "describe_target": ".target",
    "load_target": ".target",
    "__version__": "._version",
    "InvalidArgument": "reference.errors",  # the one exception for bad input lives with the reference
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
