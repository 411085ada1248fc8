"""Gives itself a CPU-time limit (RLIMIT_CPU, a second past the CPU time it has used; a soft limit
any process may lower) on its first call, then spins past it: the kernel ends it with SIGXCPU.
The grader sets no CPU-time limit of its own, but a worker ended by one ran into a resource limit:
a crash that names it, not an unknown signal."""

import resource

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    used = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (int(used.ru_utime + used.ru_stime) + 1, hard))
    while True:
        pass
