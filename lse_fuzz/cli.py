"""The ``lse-fuzz`` console script: :func:`fuzz.cli.main`, once ``fuzz`` is ours."""

from __future__ import annotations

import sys

from ._packages import PackageClash, verify_packages

USAGE = 2  # fuzz.outcomes.ExitCode.USAGE, which cannot be imported before fuzz is known to be ours


def main(argv: list[str] | None = None) -> int:
    try:
        verify_packages()
    except PackageClash as clash:
        print(f"lse-fuzz: error: {clash}", file=sys.stderr)
        return USAGE
    from fuzz.isolation import hold_signals, scrub_early  # after the check: another project's fuzz would fail confusingly

    scrub_early(sys.argv)  # the private seed off /proc first, before the imports below take their second
    hold_signals()  # before fuzz.cli imports torch, which starts a thread (see fuzz.isolation.guard.signals)
    from fuzz.cli import main as fuzz_main

    return fuzz_main(argv)
