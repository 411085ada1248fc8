"""Loadable TARGETs for a kernel's mutants, its coverage run and its broken double.

A worker loads an implementation from a TARGET string, and Triton reads a kernel's source from its
file, so every variant here is a real file in the cache (``$LSE_FUZZ_CACHE/mutate``, see
:func:`fuzz.mutation.patch.write_once`), named by the hash of its text and written once:

* a mutant with a TARGET of its own (a bundled one: ``mutants.patched:<name>``): that TARGET;
* a mutant of a self-contained kernel file: the mutated file itself, under its own name;
* a mutant of the reference package: a three-line module that loads the patched package with
  :func:`fuzz.mutation.patch.load` (the shadow copy every bundled mutant runs from);
* the gate's run: a module whose ``lse`` calls the unmutated implementation and records every
  kernel launch's specialization (:func:`gate_target`);
* the coverage run: the same with line tracing on for the kernel's files (:func:`traced`),
  appending the lines that ran to a file (:func:`coverage_target`). Tracing makes every call of
  the interpreter 2-3 times slower (on Python 3.11 a trace function deoptimizes all code, even
  frames it ignores), so this run is made only when a mutant survives or times out
  (:func:`fuzz.mutation.judge.judge`);
* the broken double: the unmutated implementation plus one, which the fuzzer must catch.

:func:`traced` runs inside the worker. In Triton's interpreter a ``@triton.jit`` function runs as
Python, from its own file and lines, so the trace sees which kernel lines ran; compiled on a GPU
it sees the launcher's lines only.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from .mutant import Mutant
from .patch import write_once as _write
from .sites import Kernel

__all__ = ["broken_target", "coverage_target", "gate_target", "mutant_target", "read_coverage", "read_launches", "traced"]


def _attribute(kernel: Kernel) -> str:
    return kernel.function.split(".")[-1]


def mutant_target(kernel: Kernel, mutant: Mutant) -> str:
    """A TARGET that loads ``kernel`` with ``mutant``'s edit."""
    if mutant.target is not None:
        return mutant.target
    if kernel.kind == "reference":
        patch = mutant.patch
        shim = (f"from fuzz.mutation.patch import Patch, load\n\n"
                f"_PATCH = Patch({patch.path!r}, {patch.anchor!r}, {patch.replacement!r})\n"
                f"{_attribute(kernel)} = load(_PATCH, name={mutant.name!r}).{_attribute(kernel)}\n")
        return f"{_write('reference_mutant.py', shim)}:{_attribute(kernel)}"
    text = mutant.mutated_sources()[mutant.file]
    return f"{_write(Path(mutant.file).name, text)}:{kernel.function}"


def _wrapper(kernel: Kernel, body: str, extra: str = "") -> str:
    name = _attribute(kernel)
    return (f"from fuzz.target import load_target\n{extra}\n"
            f"_impl = load_target({kernel.target!r})\n\n\n"
            f"def {name}(x):\n    {body}\n")


def gate_target(kernel: Kernel, out: Path) -> str:
    """A TARGET whose calls run the unmutated kernel, every kernel launch's specialization key
    recorded in :func:`launches_file` of ``out`` (what decides a compiled kernel's coverage)."""
    extra = f"from fuzz.interpreter import specialization\n\nspecialization.install({str(launches_file(out))!r})"
    return f"{_write('gate_shim.py', _wrapper(kernel, 'return _impl(x)', extra))}:{_attribute(kernel)}"


def coverage_target(kernel: Kernel, out: Path) -> str:
    """A TARGET whose calls run the unmutated kernel with its lines traced into ``out``, and every
    kernel launch's specialization key recorded in :func:`launches_file` of ``out``."""
    files = sorted(kernel.paths.values())
    extra = (f"from fuzz.interpreter import specialization\nfrom fuzz.mutation.loading import traced\n\n"
             f"specialization.install({str(launches_file(out))!r})\n_trace = traced({files!r}, {str(out)!r})")
    return f"{_write('coverage_shim.py', _wrapper(kernel, 'return _trace(_impl, x)', extra))}:{_attribute(kernel)}"


def broken_target(kernel: Kernel) -> str:
    """A TARGET that is the unmutated kernel plus one: any working suite catches it."""
    return f"{_write('broken_shim.py', _wrapper(kernel, 'return _impl(x) + 1.0'))}:{_attribute(kernel)}"


def traced(files: list[str], out: str) -> Callable:
    """``trace(impl, x)``: ``impl(x)`` with line tracing on for ``files``; each call appends the
    lines that ran for the first time to ``out`` (JSON lines: {"file": ..., "lines": [...]})."""
    wanted = {os.path.realpath(f) for f in files}
    known: dict[str, str | None] = {}
    hits: dict[str, set[int]] = {}
    written: dict[str, set[int]] = {}

    def local(frame, event, arg):
        if event == "line":
            hits[known[frame.f_code.co_filename]].add(frame.f_lineno)
        return local

    def global_trace(frame, event, arg):
        filename = frame.f_code.co_filename
        if filename not in known:
            real = os.path.realpath(filename)
            known[filename] = real if real in wanted else None
            if real in wanted:
                hits.setdefault(real, set())
        return local if known[filename] is not None else None

    def trace(impl, x):
        previous = sys.gettrace()
        sys.settrace(global_trace)
        try:
            return impl(x)
        finally:
            sys.settrace(previous)
            new = {f: sorted(lines - written.get(f, set())) for f, lines in hits.items()}
            new = {f: lines for f, lines in new.items() if lines}
            if new:
                with open(out, "a") as handle:
                    for f, lines in new.items():
                        handle.write(json.dumps({"file": f, "lines": lines}) + "\n")
                        written.setdefault(f, set()).update(lines)

    return trace


def launches_file(coverage: Path) -> Path:
    return coverage.with_name(coverage.stem + ".launches.jsonl")


def _records(path: Path) -> Iterator[dict]:
    """The JSON objects of a JSON-lines file a worker appended to (none when it is missing)."""
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a worker that died mid-write
        if isinstance(record, dict):
            yield record


def read_launches(coverage: Path) -> dict[str, list[dict]]:
    """Kernel function name -> the distinct constexpr values of its launches in the run that wrote
    ``coverage`` (``{"PREFETCH": false, "BLOCK_N": 64, ...}`` each)."""
    found: dict[str, list[dict]] = {}
    for record in _records(launches_file(coverage)):
        if "key" not in record:
            continue
        values = {entry[0]: entry[2] for entry in record["key"] if len(entry) == 3 and entry[1] == "constexpr"}
        runs = found.setdefault(str(record["kernel"]).split("@")[0], [])
        if values not in runs:
            runs.append(values)
    return found


def read_coverage(path: Path) -> dict[str, set[int]]:
    """Absolute file -> the lines that ran, from a :func:`traced` output file."""
    covered: dict[str, set[int]] = {}
    for entry in _records(path):
        covered.setdefault(entry["file"], set()).update(entry["lines"])
    return covered
