"""The planted mutants (files under ``mutants/`` here) as :class:`mutants.Mutant` objects."""

from __future__ import annotations

from pathlib import Path

from mutants import Mutant

PLANTED = Path(__file__).parent / "mutants"


def planted_mutant(name: str, pitfall: str = "planted test double", expected_check: str = "agreement") -> Mutant:
    return Mutant(name=f"planted_{name}", pitfall=pitfall, source="tests/implementations/mutants",
                  expected_check=expected_check, target=f"{PLANTED / (name + '.py')}:lse")
