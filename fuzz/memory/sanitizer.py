"""compute-sanitizer: where it is, and what its report says, as findings a person can act on.

A report is the tool's lines (each starting ``=========``) between the probe's own lines
(``lse-fuzz-probe I start DESC``, :mod:`fuzz.memory.probe`). An error is a block:

    ========= Invalid __global__ read of size 4 bytes
    =========     at _lse_kernel+0x1ec0 in _lse_kernel.py:72
    =========     by thread (65,0,0) in block (0,0,0)
    =========     Access to 0x7f24ae800004 is out of bounds
    =========     and is 1 bytes after the nearest allocation at 0x7f24ae800000 of size 4 bytes
    =========     Saved host backtrace up to driver entry point at kernel launch time
    =========         Host Frame: ...

(memcheck; initcheck's is "Uninitialized __global__ memory read of size 4 bytes" with the address).
The tool's "Program hit cudaError..." blocks follow an error it stopped the kernel for and are not
findings of their own. Formats as compute-sanitizer 2025.3 prints them (CUDA 13).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field

__all__ = ["CHECKS", "Finding", "TOOLS", "find", "parse"]

TOOLS = {"memcheck": "memory_bounds", "initcheck": "uninitialized_read"}
"""The tools the memory phase runs, and the check each one's findings fail."""
CHECKS = tuple(TOOLS.values())
"""The checks the memory phase decides on a GPU."""

_MARK = "========="
_ERROR = re.compile(r"^(Invalid __\w+__ (read|write|atomic)|Uninitialized __\w+__ memory read|"
                    r"Misaligned|Out-of-range|Invalid (shared|local|global) )")
PROBE_LINE = re.compile(r"^lse-fuzz-probe (\d+) start (.*)$")
_RESULT_LINE = re.compile(r"^lse-fuzz-probe \d+ result$")  # what follows reads the call's result
"""A probe's first line (:mod:`fuzz.memory.probe`): its index and description."""
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")


@dataclass
class Finding:
    """One error the tool reported (the first of its kind; ``errors`` counts all of the run's)."""

    check: str  # memory_bounds (memcheck) or uninitialized_read (initcheck)
    tool: str
    what: str  # "Invalid __global__ read of size 4 bytes"
    lines: list[str] = field(default_factory=list)  # where: the kernel and line, thread, address, allocation
    probe: str = ""  # the probe's description
    errors: int = 1
    in_result: bool = False  # found as the probe read the implementation's result after the call

    @property
    def kernel(self) -> str:
        """'_lse_kernel at _lse_kernel.py:72' from the block's "at" line."""
        if self.in_result:
            return "the implementation's result (the probe read it after the call: bytes nothing wrote)"
        for line in self.lines:
            found = re.match(r"at (\S+?)(\+0x[0-9a-f]+)? in (\S+)", line)
            if found:
                return f"{found.group(1)} at {found.group(3)}"
        return "an unnamed kernel"

    def to_dict(self) -> dict:
        return {"check": self.check, "tool": self.tool, "what": self.what, "kernel": self.kernel,
                "lines": list(self.lines), "probe": self.probe, "errors": self.errors, "in_result": self.in_result}


def find() -> str | None:
    """The compute-sanitizer executable: on PATH, else under CUDA_HOME or /usr/local/cuda; None if absent."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidate = os.path.join(home, "bin", "compute-sanitizer")
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def parse(text: str, tool: str) -> Finding | None:
    """The first error of ``tool``'s report ``text`` (None: it reported none), with the probe it
    happened in and how many errors the run had in all."""
    probe, finding, reading = "", None, False
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        started = PROBE_LINE.match(line.strip())
        if started:
            probe, reading = started.group(2), False
        elif _RESULT_LINE.match(line.strip()):
            reading = True
        elif line.startswith(_MARK) and finding is None:
            body = line[len(_MARK):].strip()
            if _ERROR.match(body):
                finding = Finding(TOOLS.get(tool, "memory_bounds"), tool, body, probe=probe, in_result=reading)
                index += 1
                while index < len(lines) and lines[index].startswith(_MARK):
                    detail = lines[index][len(_MARK):].strip()
                    if not detail or detail.startswith(("Saved host backtrace", "Host Frame")):
                        if not detail:
                            break
                    else:
                        finding.lines.append(detail)
                    index += 1
                continue
        summary = _SUMMARY.search(line)
        if summary and finding is not None and "not printed" not in line:
            finding.errors = max(1, int(summary.group(1)))
        index += 1
    return finding
