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

__all__ = ["CHECKS", "Finding", "TOOLS", "find", "parse", "reported", "unjudged"]

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
    """One error the tool reported (the first of its kind; ``errors`` counts the run's, those
    printed by when the phase stopped the tools if a finding decided the verdict first)."""

    check: str  # memory_bounds (memcheck) or uninitialized_read (initcheck)
    tool: str
    what: str  # "Invalid __global__ read of size 4 bytes"
    lines: list[str] = field(default_factory=list)  # where: the kernel and line, thread, address, allocation
    probe: str = ""  # the probe's description
    errors: int = 1
    in_result: bool = False  # found as the probe read the implementation's result after the call

    @property
    def kernel(self) -> str:
        """'_lse_kernel at _lse_kernel.py:72' from the block's "at" line; a compiled library's
        kernel, which has no source line, by its symbol ('void at::native::reduce_kernel<...>')."""
        if self.in_result:
            return "the implementation's result (the probe read it after the call: bytes nothing wrote)"
        symbol, source = self._at()
        if source:
            return f"{symbol} at {source}"
        if symbol:
            return symbol if len(symbol) <= 120 else symbol[:117] + "..."
        return "an unnamed kernel"

    @property
    def function(self) -> str:
        """The kernel's function alone: 'at::native::reduce_kernel' of 'void
        at::native::reduce_kernel<(int)512, ...>(T3)' (no return type, template or parameters),
        '_lse_kernel' of a Triton kernel; "" with no "at" line."""
        symbol, depth, kept = self._at()[0].replace("(anonymous namespace)", "{anonymous}"), 0, []
        for char in symbol:
            depth += (char in "<(") - (char in ">)")
            if depth == 0 and char not in ">)":
                kept.append(char)
        words = "".join(kept).split()
        return words[-1] if words else symbol

    def _at(self) -> tuple[str, str]:
        """(symbol, source line) of the block's "at" line: ``at SYMBOL+0xOFFSET in FILE:LINE``, the
        source absent for a kernel compiled without line information; ("", "") with no such line."""
        for line in self.lines:
            found = re.match(r"at (.+?)(\+0x[0-9a-f]+)?(?: in (\S+))?$", line)
            if found:
                return found.group(1), found.group(3) or ""
        return "", ""

    @property
    def in_library(self) -> bool:
        """Whether the access is a compiled library's kernel's own (PyTorch's ``at::native::...``,
        CUB's): a C++ symbol with no Python source line, where the implementation's Triton kernels
        (and torch.compile's) are named by their function and a ``.py`` line."""
        symbol, source = self._at()
        return not re.search(r"\.py:\d+$", source) and bool(re.search(r"::|[<(]", symbol))

    @property
    def judged(self) -> bool:
        """Whether this error is the implementation's to answer for. Every memcheck error is. An
        initcheck read inside a library's kernel during the call is not: the library's own scratch
        (PyTorch's split reductions read staging slots no block stored, for lanes they discard;
        measured: ``torch.amax`` of a float64 (511, 8193) transposed view, 66 reports), as the CPU's
        ``uninitialized_read`` judges Triton kernels' loads and the result, never a library's.
        After the call, the probe's read of the result is judged whatever kernel does it."""
        return not (self.check == "uninitialized_read" and not self.in_result and self.in_library)

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
    """The first error of ``tool``'s report ``text`` that the implementation answers for
    (:attr:`Finding.judged`; None: none), with the probe it happened in and how many errors the run
    had in all (those printed that it answers for, where the tool also reported others)."""
    errors, total = reported(text, tool)
    judged = [finding for finding in errors if finding.judged]
    if not judged:
        return None
    judged[0].errors = len(judged) if len(judged) < len(errors) else max(1, total or 1)
    return judged[0]


def unjudged(text: str, tool: str) -> list[Finding]:
    """The errors of ``tool``'s report that are not the implementation's (see :attr:`Finding.judged`)."""
    return [finding for finding in reported(text, tool)[0] if not finding.judged]


def reported(text: str, tool: str) -> tuple[list[Finding], int]:
    """Every error block ``text`` prints, in order, each with its probe and whether the probe was
    reading the result, and the summary's count of errors (0 when it has none)."""
    probe, reading, found, total = "", False, [], 0
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        started = PROBE_LINE.match(line.strip())
        if started:
            probe, reading = started.group(2), False
        elif _RESULT_LINE.match(line.strip()):
            reading = True
        elif line.startswith(_MARK) and _ERROR.match(line[len(_MARK):].strip()):
            finding = Finding(TOOLS.get(tool, "memory_bounds"), tool, line[len(_MARK):].strip(), probe=probe,
                              in_result=reading)
            index += 1
            while index < len(lines) and lines[index].startswith(_MARK):
                detail = lines[index][len(_MARK):].strip()
                if not detail:
                    break
                if not detail.startswith(("Saved host backtrace", "Host Frame")):
                    finding.lines.append(detail)
                index += 1
            found.append(finding)
            continue
        summary = _SUMMARY.search(line)
        if summary and "not printed" not in line:
            total = int(summary.group(1))
        index += 1
    return found, total
