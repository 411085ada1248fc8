"""Isolation: the implementation under test runs in worker processes, never in the fuzzer's.

* :mod:`.proxy`: :class:`IsolatedImpl`, a callable that runs a TARGET in a worker (what
  ``lse-fuzz check`` fuzzes); :mod:`.restarting`: :class:`RestartingImpl` (``pytest --lse-isolate``);
* :mod:`.pool`: the one worker pool (:class:`Pool`) that ``grade``, ``mutants`` and the campaign
  scripts run their jobs in;
* :mod:`.zygote` / :mod:`.child`: the fork server every worker and driver is forked from;
* :mod:`.worker`: the candidate worker; :mod:`.wire`: the message format between them;
  :mod:`.compile_watch` / :mod:`.compile_clock`: compiling is not hanging (the worker's notices,
  the proxy's clock that stops for them);
* :mod:`.shared_input`, :mod:`.held_outputs`: what the parent decides for itself (a changed
  input, a returned buffer overwritten later); :mod:`.op_record`: the operators a call ran;
  :mod:`.appearance`: a worker that looks like any ``python3`` process;
* :mod:`.environment`: the scrubbed environment and limits of a child.

Names are imported on first use: the fork server imports :mod:`.child` through this package and
must not pay for (or be changed by) anything else.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CandidateRaised": "proxy",
    "IsolatedImpl": "proxy",
    "LoadFailed": "proxy",
    "Noise": "noise",
    "RestartingImpl": "restarting",
    "Job": "pool",
    "JobResult": "pool",
    "Pool": "pool",
    "spread_over": "gpus",
    "default_memory_limit": "environment",
    "worker_environment": "environment",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'fuzz.isolation' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
