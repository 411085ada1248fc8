"""The planted mutants (files under ``mutants/`` here), shaped like :class:`mutants.Mutant` for the
mutation harness: a name, a pitfall, a source, the check expected to kill it, and a loadable target.

They are not patches of the reference but whole files with a known status (an equivalent mutant,
a crash, a hang, a compile error), so the harness's statuses can be shown on each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PLANTED = Path(__file__).parent / "mutants"


@dataclass(frozen=True)
class PlantedMutant:
    name: str
    pitfall: str
    source: str
    expected_check: str
    path: str
    patch: None = None

    @property
    def target(self) -> str:
        return f"{self.path}:lse"


def planted_mutant(name: str, pitfall: str = "planted test double", expected_check: str = "agreement") -> PlantedMutant:
    return PlantedMutant(name=f"planted_{name}", pitfall=pitfall, source="tests/implementations/mutants",
                         expected_check=expected_check, path=str(PLANTED / f"{name}.py"))
