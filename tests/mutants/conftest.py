"""Shared fixtures of the mutation tests: the planted doubles as Mutant objects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PLANTED = Path(__file__).parent / "planted"

if os.environ.get("PYTEST_XDIST_WORKER"):  # one torch thread per xdist worker (see tests/fuzz)
    import torch

    torch.set_num_threads(1)


def planted(name: str, pitfall: str = "planted test double", expected_check: str = "agreement"):
    from mutants import Mutant

    return Mutant(name=f"planted_{name}", pitfall=pitfall, source="tests/mutants/planted",
                  expected_check=expected_check, target=f"{PLANTED / (name + '.py')}:lse")


@pytest.fixture
def planted_mutant():
    return planted
