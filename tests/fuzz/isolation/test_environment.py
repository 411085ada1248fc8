"""The scrubbed environment and the default limits of a worker (fuzz.isolation.environment)."""

from __future__ import annotations

import pytest

from fuzz.isolation.environment import MEMORY_CAP, MEMORY_FLOOR, default_memory_limit

GIB = 1 << 30


@pytest.mark.parametrize(("total", "jobs", "expected"), [
    (24 * GIB, 1, 12 * GIB),  # half the machine: the grader and the system keep the rest
    (24 * GIB, 2, 6 * GIB),  # ... shared among the jobs
    (512 * GIB, 1, MEMORY_CAP),  # never all of a large machine
    (8 * GIB, 4, MEMORY_FLOOR),  # never too little for a correct candidate
], ids=["one_job", "two_jobs", "capped", "floor"])
def test_the_default_memory_limit_leaves_the_machine_room(total, jobs, expected):
    assert default_memory_limit("cpu", jobs=jobs, total=total) == expected


def test_no_memory_limit_on_a_gpu():
    assert default_memory_limit("cuda", total=24 * GIB) is None  # CUDA's address reservations break RLIMIT_AS
