"""Memory safety on a GPU: the memory phase (:mod:`.phase`), its probes (:mod:`.probe`) and
compute-sanitizer's reports (:mod:`.sanitizer`). On the CPU the same checks run inside every call
(:mod:`fuzz.interpreter.bounds`, :mod:`fuzz.interpreter.initialized`)."""

from __future__ import annotations

from .phase import WAIT_SECONDS, MemoryReport, Probing, merged, run, start
from .sanitizer import CHECKS as MEMORY_CHECKS

__all__ = ["MEMORY_CHECKS", "WAIT_SECONDS", "MemoryReport", "Probing", "merged", "run", "start"]
