"""Isolation: the implementation under test runs in worker processes, never in the fuzzer's.

Callers use the names below; the subpackages are how it is built:

* :mod:`.fork_server`: the fork server ("zygote") every worker and driver is forked from (its
  ``server``, its ``client``), and :class:`~.fork_server.child.Child`, the one handle that spawns
  a child of it, reads its log, kills it and waits for it;
* :mod:`.worker`: the process that runs the implementation under test (``process``) and its
  proxy here, :class:`IsolatedImpl` (what ``lse-fuzz check`` fuzzes; :class:`RestartingImpl` for
  ``pytest --lse-isolate``), with what both sides need: the tensor codec, the shared input, held
  outputs, compiling is not hanging (``compile_watch`` / ``compile_clock``), noise, the operator
  record, a worker that looks like any ``python3`` process, the benchmark's requests and input;
* :mod:`.pool`: the one worker pool (:class:`Pool`) that ``grade``, ``mutants``, ``mutate`` and
  the campaign scripts run their jobs in, its drivers, and its spread over GPUs;
* :mod:`.guard`: the grader against its candidates: signals sent to it (:class:`SignalGuard`),
  stopped processes continued (``stops``) and who did it (``blame``), the private seed wiped
  from /proc (``secret``);
* shared by them: :mod:`.environment` (the scrubbed environment and limits of a child),
  :mod:`.wire` (the message format) and :mod:`.processes` (prctl, killing a process group, /proc).

Layers, lowest first (tests/test_architecture.py): the shared modules, guard, fork_server,
worker, pool. Names are imported on first use: the fork server imports its server module through
this package, and the command line takes the signals before torch is imported; neither must pay
for (or be changed by) anything else.
"""

from __future__ import annotations

from .._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "CandidateRaised": ".worker.raised",
    "LoadFailed": ".worker.raised",
    "IsolatedImpl": ".worker.proxy",
    "Noise": ".worker.noise",
    "RestartingImpl": ".worker.restarting",
    "seeded_input": ".worker.bench_input",
    "Job": ".pool.job",
    "JobResult": ".pool.pool",
    "Pool": ".pool.pool",
    "spread_over": ".pool.gpus",
    "note_event": ".pool.timeline",
    "SignalEvent": ".guard.signals",
    "SignalGuard": ".guard.signals",
    "describe_signals": ".guard.signals",
    "describe_stops": ".guard.signals",
    "hold_signals": ".guard.signals",
    "release_signals": ".guard.signals",
    "remember": ".guard.signals",
    "forget": ".guard.signals",
    "Timeline": ".guard.blame",
    "own_stops": ".guard.blame",
    "start_watchdog": ".guard.watchdog",
    "Supervision": ".guard.supervisor",
    "supervise": ".guard.supervisor",
    "scrub_early": ".guard.secret",
    "scrub_from_proc": ".guard.secret",
    "prestart": ".fork_server.client",
    "RUN_ENV": ".environment",
    "default_memory_limit": ".environment",
    "expected_worker_environment": ".environment",
    "worker_environment": ".environment",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
