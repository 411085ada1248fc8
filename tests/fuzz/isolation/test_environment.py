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


@pytest.mark.parametrize(("cuda", "expected"), [(False, "1"), (True, None)], ids=["no_gpu", "gpu"])
def test_the_fork_servers_environment_is_foreseen_before_torch_is_imported(monkeypatch, cuda, expected):
    # Importing the project's kernels turns on Triton's interpreter where no CUDA device is present;
    # the early start has to start its fork server with the environment the pool will ask for.
    from fuzz.isolation import environment

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv(environment.RUN_ENV, "a-run-token")  # the run's token is not part of the key
    monkeypatch.setattr(environment, "_cuda_device_present", lambda: cuda)
    env = environment.expected_worker_environment()
    assert env.get("TRITON_INTERPRET") == expected
    assert environment.RUN_ENV not in env
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # the user's own choice is kept
    assert environment.expected_worker_environment()["TRITON_INTERPRET"] == "0"


def test_the_cuda_probe_answers_without_torch():
    from fuzz.isolation.environment import _cuda_device_present

    import torch

    assert _cuda_device_present() == torch.cuda.is_available()
