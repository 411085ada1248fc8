"""lse-fuzz: correctness fuzzing and mutation testing for row-wise LogSumExp kernels.

The one import of the public API (the distribution also installs ``fuzz``, ``reference`` and
``mutants``, names other projects use too; this one is unique)::

    import lse_fuzz

    result = lse_fuzz.check(my_lse, budget=200, seed=0, contract="finite")
    print(result.summary())        # which check, which row, expected vs got, the replay command

    test_my_lse = lse_fuzz.lse_suite("kernels/my_lse.py:lse")   # in a test module: one item per check

    @hypothesis.given(lse_fuzz.lse_inputs(contract="finite"))   # inputs for your own property tests
    def test_matches_the_oracle(example):
        assert lse_fuzz.compare(example.x, my_lse(example.x)).ok

Names are imported on first use, so importing this package (as pytest does, to load the plugin
``lse_fuzz.plugin``) costs nothing. The first use checks that ``fuzz``, ``reference`` and
``mutants`` are lse-fuzz's own and raises :class:`PackageClash` naming the other package if not.

Every exception lse-fuzz raises on purpose derives from :class:`LseFuzzError` (and keeps its
built-in kind: ``InvalidArgument`` is a ``ValueError``); ``ImplLost`` alone is a ``BaseException``,
so that no ``except Exception`` swallows the loss of the implementation's worker.
"""

from __future__ import annotations

import importlib

from ._errors import LseFuzzError
from ._packages import PackageClash, verify_packages as _verify_packages

_EXPORTS = {
    # running the checks
    "check": "fuzz.runner",
    "replay": "fuzz.runner",
    "CheckResult": "fuzz.runner",
    "CHECKS": "fuzz.checks",
    "CheckFailure": "fuzz.failures",
    "ImplError": "fuzz.failures",
    "ImplLost": "fuzz.outcomes",
    "Status": "fuzz.outcomes",
    "Verdict": "fuzz.outcomes",
    "PROFILES": "fuzz.profiles",
    "load_target": "fuzz.target",
    # your own tests
    "lse_suite": "fuzz.suite",
    "lse_inputs": "fuzz.strategies",
    "Contract": "fuzz.contract",
    "CallConvention": "fuzz.calls",  # how the implementation is called: N-D input, dim, keepdim, result
    "ConventionError": "fuzz.calls",
    "LseInput": "fuzz.strategies",
    "RECIPES": "fuzz.strategies",
    # what "right" means
    "lse": "reference",
    "lse_reference": "reference",
    "compare": "reference",
    "InvalidArgument": "reference.errors",
    "__version__": "fuzz._version",
}
_MODULES = {"strategies": "fuzz.strategies"}  # the strategies' building blocks: shapes, dtypes, layouts, ...

__all__ = sorted([*_EXPORTS, *_MODULES, "LseFuzzError", "PackageClash"])


def __getattr__(name: str):
    if name not in _EXPORTS and name not in _MODULES:
        raise AttributeError(f"module 'lse_fuzz' has no attribute {name!r}")
    _verify_packages()
    value = importlib.import_module(_MODULES[name]) if name in _MODULES \
        else getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # found once: later uses do not come back here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
