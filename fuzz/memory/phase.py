"""The memory phase of a GPU run: the probes under compute-sanitizer, after the fuzzing passed.

On a GPU a kernel that reads past its row and discards the lanes, stores one element past its
output or reads a partial nobody stored returns the right numbers: the value checks pass it, and
PyTorch's caching allocator hides the access from any memory checker (a read past a tensor lands
in the allocator's slack). This phase runs the implementation on fixed probes (:mod:`.probe`)
under compute-sanitizer's memcheck (fails ``memory_bounds``) and initcheck (fails
``uninitialized_read``), each in a process of its own with the caching allocator off
(``PYTORCH_NO_CUDA_MEMORY_CACHING=1``: every tensor an allocation of its own), both at once, each
within :data:`TOOL_SECONDS`. Where compute-sanitizer is absent, the same probes run on the CPU in
Triton's interpreter, judged by the CPU's checks of the same names; the report says which ran.

The processes start with the run and wait, once the fixed probes are done, for the run's own
inputs (:meth:`Probing.report`): the counterexample the fuzzing saved and the largest input it
drew, replayed under the same tools, so a verdict pays no second start of a tool. memcheck also
gets the views past 2**31 elements (``huge``, where the run draws huge offsets). Once a finding
decides the verdict (memcheck's, or initcheck's after a memcheck that found nothing) the tools are
stopped: the probes after it could not change it.

It judges ``lse(x)`` of 2-D inputs only (a call convention's carrier is not probed) and runs only
for the checks the run selected. A probe that raises, a tool that times out or cannot start is a
note, never a verdict: the fuzzing already judged the values.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from ..interpreter.bounds import OutOfBounds
from . import sanitizer
from .sanitizer import TOOLS, Finding

__all__ = ["MemoryReport", "Probing", "TOOL_SECONDS", "WAIT_SECONDS", "describe", "merged", "replay_command", "run",
           "start"]

TOOL_SECONDS = 90.0
"""The most one tool's run may take (measured on an H200: about 10 s each, CUDA 13's
compute-sanitizer 2025.3, the eight probes of one dtype; a kernel that autotunes runs each probe
once per config, up to eight). Past it the tool is stopped and the report says so."""

REPLAY_SECONDS = 45.0
"""How long the tools may take for the run's own inputs (a call or two each) when they are handed
over past the fixed probes' limit and the caller sets no limit of its own."""

WAIT_SECONDS = 30.0
"""The most a verdict waits for the phase once the fuzzing ended (what a grading passes to
:meth:`Probing.report`): past it the tools are stopped and what they found by then counts."""

PRINT_LIMIT = {"memcheck": 3, "initcheck": 100}
"""Errors each tool prints. memcheck's first is the finding; initcheck may first print reads inside
a library's kernel, which are not judged (:attr:`fuzz.memory.sanitizer.Finding.judged`; 66 for one
``torch.amax``), and must not hide the implementation's own behind them."""

_PROBE_MODULE = "fuzz.memory.probe"


@dataclass
class MemoryReport:
    """What the phase ran and found (``finding``: the first, memcheck's before initcheck's)."""

    ran: str  # "compute-sanitizer memcheck, initcheck" | "the CPU interpreter's memory checks" | ""
    seconds: float = 0.0
    probes: int = 0  # the probes the contract admitted (as the probe process said)
    finding: Finding | None = None
    notes: list[str] = field(default_factory=list)
    replay: str = ""
    waited: float = 0.0  # of ``seconds``, how long the verdict waited for it (it runs beside the fuzzing)

    def describe(self) -> str:
        """One line: what ran, on how many probes, and what it found."""
        return describe(self.to_dict())

    def to_dict(self) -> dict:
        return {"ran": self.ran, "seconds": round(self.seconds, 3), "waited": round(self.waited, 3),
                "probes": self.probes, "finding": None if self.finding is None else self.finding.to_dict(),
                "notes": list(self.notes), "replay": self.replay}


def merged(first: MemoryReport, then: MemoryReport) -> MemoryReport:
    """One report of two runs of the phase one after the other (tools started apart): ``then``'s
    finding, both runs' notes and seconds."""
    prefix = "compute-sanitizer "
    if first.ran.startswith(prefix) and then.ran.startswith(prefix):
        ran = prefix + ", ".join(t for t in (first.ran[len(prefix):], then.ran[len(prefix):]) if t)
    elif first.ran == then.ran or not first.ran:  # the interpreter's checks, both times
        ran = then.ran
    else:
        ran = "; then ".join(r for r in (first.ran, then.ran) if r)
    return MemoryReport(ran, first.seconds + then.seconds, max(first.probes, then.probes), then.finding,
                        [*first.notes, *then.notes], then.replay, first.waited + then.waited)


def describe(memory: dict) -> str:
    """One line for a record's ``memory`` (:meth:`MemoryReport.to_dict`)."""
    notes = [str(note) for note in memory.get("notes") or []]
    ran = str(memory.get("ran") or "")
    if not ran:
        return "memory:   not checked on the GPU (" + "; ".join(notes) + ")"
    finding = memory.get("finding")
    found = "clean" if not isinstance(finding, dict) else f"{finding.get('what')} ({finding.get('tool')})"
    allocator = ", caching allocator off" if ran.startswith("compute-sanitizer") else ""
    seconds, waited = (memory.get(key) if isinstance(memory.get(key), (int, float)) else 0.0
                       for key in ("seconds", "waited"))
    took = f"{seconds:.1f} s beside the fuzzing, {waited:.1f} s after it" if waited < seconds - 0.05 else \
        f"{seconds:.1f} s"
    return f"memory:   {ran} on {memory.get('probes', 0)} probes{allocator}: {found} ({took})" + \
        "".join(f"; {note}" for note in notes)


def _probes_in(output: str) -> int:
    """How many probes the probe process said it would run."""
    counts = [int(line.split()[2]) for line in output.splitlines()
              if line.startswith("lse-fuzz-probe probes ") and line.split()[2].isdigit()]
    return max(counts, default=0)


def replay_command(target: str, tool: str, options: list[str], executable: str = "compute-sanitizer") -> str:
    """The shell command that shows ``tool``'s whole report on the probes."""
    return (f"PYTORCH_NO_CUDA_MEMORY_CACHING=1 {executable} --tool {tool} "
            f"python -m {_PROBE_MODULE} {target} {' '.join(options)}")


def run(target: str, *, checks: tuple[str, ...], dtype: str = "float32", also: tuple[str, ...] = (),
        device: str = "cuda", max_n: int | None = None, contiguous: bool = False, huge: bool = False,
        executable: str | None = None, seconds: float = TOOL_SECONDS, inputs: list[dict] = ()) -> MemoryReport:
    """Probe ``target`` (a TARGET loadable by a fresh process) for the memory ``checks`` selected,
    with the probes its contract admits (in ``dtype``, and those of
    :data:`fuzz.memory.probe.ELEMENT_SIZE_PROBES` in each dtype of ``also``, one per other element
    size; ``max_n`` columns at most; ``contiguous`` inputs only; ``huge``: the views past 2**31
    elements under memcheck), then ``inputs`` (see :func:`fuzz.memory.probe.replay_inputs`)."""
    return start(target, checks=checks, dtype=dtype, also=also, device=device, max_n=max_n, contiguous=contiguous,
                 huge=huge, executable=executable, seconds=seconds).report(inputs)


def start(target: str, *, checks: tuple[str, ...], dtype: str = "float32", also: tuple[str, ...] = (),
          device: str = "cuda", max_n: int | None = None, contiguous: bool = False, huge: bool = False,
          executable: str | None = None, seconds: float = TOOL_SECONDS) -> Probing:
    """:func:`run`'s processes started, to run beside something else (the fuzzing): the
    :class:`Probing`'s ``report(inputs)`` hands them the run's inputs and waits for them,
    ``cancel()`` stops them."""
    tools = [tool for tool, check in TOOLS.items() if check in checks]
    if not tools:
        return Probing(MemoryReport("", notes=["the run's checks leave memory_bounds and uninitialized_read out"]))
    if "@" in target:
        return Probing(MemoryReport("", notes=["the probes call lse(x) of 2-D inputs; this run declared a "
                                               "call convention"]))
    executable = executable or sanitizer.find()
    within = [*(["--max-n", str(max_n)] if max_n is not None else []), *(["--contiguous"] if contiguous else []),
              "--dtype", dtype, *(["--also", ",".join(also)] if also else [])]
    # The views past 2**31 elements are a memcheck matter (an address a 32-bit offset wrapped to).
    extra = {tool: ["--huge"] if huge and tool in ("memcheck", "interpreter") else [] for tool in [*tools, "interpreter"]}
    probing = Probing(None, target=target, options=within, tools=tools, executable=executable, seconds=seconds,
                      extra=extra)
    handed = ["--then", probing.directory, "--parent", str(os.getpid())]
    probe = [sys.executable, "-m", _PROBE_MODULE, target]
    if executable is None:  # no compute-sanitizer: the probes on the CPU, in Triton's interpreter
        probing.launch("interpreter", [*probe, "--interpreter", *within, *extra["interpreter"], *handed],
                       _environment(TRITON_INTERPRET="1"))
    else:
        for tool in tools:
            probing.launch(tool, [executable, "--tool", tool, "--print-limit", str(PRINT_LIMIT[tool]),
                                  "--error-exitcode", "86", *probe, "--device", device, *within, *extra[tool],
                                  *handed], _environment())
    return probing


class Probing:
    """The phase's processes while they run; each writes to a file of its own (no pipe to fill while
    nobody reads it). ``report()`` waits for them (at most their limit) and reads what they found."""

    def __init__(self, done: MemoryReport | None, *, target: str = "", options: list[str] = (),
                 tools: list[str] = (), executable: str | None = None, seconds: float = TOOL_SECONDS,
                 extra: dict[str, list[str]] | None = None) -> None:
        self._done, self.target, self.options, self.tools = done, target, list(options), list(tools)
        self.executable, self.seconds, self.extra = executable, seconds, dict(extra or {})
        self.started, self.wall_started = time.monotonic(), time.time()
        self._running: dict[str, tuple[subprocess.Popen, object]] = {}
        # Where report() hands over the run's inputs (the processes wait for them there).
        self.directory = "" if done is not None else tempfile.mkdtemp(prefix="lse-fuzz-probe-")

    def launch(self, name: str, command: list[str], env: dict[str, str]) -> None:
        output = tempfile.TemporaryFile(mode="w+", errors="replace")
        self._running[name] = (subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, env=env, start_new_session=True), output)

    def found(self) -> bool:
        """Whether a tool has reported a stray access already, read from its output so far without
        waiting: the fuzzing beside the phase can then stop, as the verdict is the memory check's."""
        if self._done is not None:
            return self._done.finding is not None
        return any(self._finds(name, text) for name, text in self._so_far().items())

    def _so_far(self) -> dict[str, str]:
        """Each running tool's output so far, read without waiting (none once report() or cancel() took it)."""
        texts = {}
        for name, (_, output) in list(self._running.items()):
            try:
                texts[name] = os.pread(output.fileno(), 1 << 20, 0).decode(errors="replace")
            except (OSError, ValueError):  # closed: report() or cancel() took it
                continue
        return texts

    def _finds(self, name: str, text: str) -> bool:
        if name == "interpreter":
            return _interpreted(self.target, [], self.tools, text, True, "").finding is not None
        return sanitizer.parse(text, name) is not None

    def _decided(self) -> str | None:
        """The tool whose finding is the verdict's already, if one is (read where it is whole: a
        sanitizer's error blocks before its last probe line, which the probe prints after each
        call's synchronize; the interpreter's lines to the last newline); the first tool's finding
        wins (memcheck's), so a later one decides only once those before it ended without one."""
        texts = self._so_far()
        for name, (process, _) in self._running.items():
            text = texts.get(name, "")
            whole = text.rfind("\n") + 1 if name == "interpreter" else max(text.rfind("lse-fuzz-probe "), 0)
            if self._finds(name, text[:whole]):
                return name
            if process.poll() is None:
                return None
        return None

    def _until_decided(self, deadline: float) -> str | None:
        """Wait until every process ended, ``deadline``, or a finding decided the verdict: then the
        rest of the probes can change nothing, and the processes are stopped rather than waited
        for. The deciding tool, or None."""
        while any(process.poll() is None for process, _ in self._running.values()) and time.monotonic() < deadline:
            decided = self._decided()
            if decided is not None:
                for process, _ in self._running.values():
                    _stop(process)
                return decided
            time.sleep(0.05)
        return None

    def cancel(self) -> None:
        """Stop what still runs (the run ended without needing the phase)."""
        for process, output in self._running.values():
            _stop(process)
            output.close()
        self._running.clear()
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def report(self, inputs: list[dict] = (), most: float | None = None) -> MemoryReport:
        """What the phase found, the run's ``inputs`` replayed after the fixed probes (waits for its
        processes, ``most`` seconds at most if given; ``waited``: how long this call waited). A tool
        stopped at the limit still reports what it found by then."""
        if self._done is not None:
            return self._done
        asked, asked_wall = time.monotonic(), time.time()
        inputs = list(inputs)
        handed = os.path.join(self.directory, "inputs.json")
        with open(handed + ".tmp", "w") as file:
            json.dump(inputs, file)
        os.replace(handed + ".tmp", handed)  # whole, or not yet there
        if inputs:  # the replay names them
            self.options += ["--inputs", shlex.quote(json.dumps(inputs))]
        outputs, ended = {}, self.wall_started
        deadline = asked + most if most is not None else \
            max(self.started + self.seconds, asked + min(self.seconds, REPLAY_SECONDS))
        decided = self._until_decided(deadline)
        for name, (process, output) in self._running.items():
            finished = decided is not None or _wait(process, deadline)
            ended = max(ended, os.fstat(output.fileno()).st_mtime)  # its last line: when it was done
            output.seek(0)
            outputs[name] = (output.read(), finished)
            output.close()
        self._running.clear()
        # When the tools were done with the fixed probes (each process marks it as it starts to wait).
        idle = [os.stat(path).st_mtime for path in glob.glob(os.path.join(self.directory, "waiting.*"))]
        shutil.rmtree(self.directory, ignore_errors=True)
        limit = f"at its limit of {self.seconds:g} s" if most is None else \
            f"{most:g} s after the fuzzing ended (the most a verdict waits for it)"
        if self.executable is None:
            report = _interpreted(self.target, self.options + self.extra.get("interpreter", []), self.tools,
                                  *outputs["interpreter"], limit)
        else:
            report = _sanitized(self.target, self.options, self.extra, self.executable, outputs, limit, decided)
        # Its own time: the fixed probes (to when the tools began to wait for the run's inputs), then
        # the run's inputs (to the tools' last output); and how much of it the verdict waited for.
        report.waited = time.monotonic() - asked
        busy = (max(idle) - self.wall_started) + max(ended - asked_wall, 0.0) if idle else ended - self.wall_started
        report.seconds = max(busy, report.waited)
        self._done = report
        return report


def _environment(**more: str) -> dict[str, str]:
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", PYTHONUNBUFFERED="1", **more)
    # The probe imports the fuzzer as this process does, wherever it was installed or run from.
    path = os.pathsep.join(p for p in sys.path if p)
    env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _stop(process: subprocess.Popen) -> None:
    """Stop ``process`` with its whole session (the tool's child, the probe, runs in it)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()


def _wait(process: subprocess.Popen, deadline: float) -> bool:
    """Whether ``process`` finished by ``deadline``; a late one is stopped."""
    try:
        process.wait(timeout=max(0.1, deadline - time.monotonic()))
        return True
    except subprocess.TimeoutExpired:
        _stop(process)
        return False


def _notes_of(tool: str, output: str, finished: bool, limit: str) -> list[str]:
    notes = []
    if not finished:
        notes.append(f"{tool} stopped {limit}")
    raised = [line.split(" raised ", 1)[1] for line in output.splitlines()
              if line.startswith("lse-fuzz-probe ") and " raised " in line]
    if raised:
        notes.append(f"a probe raised under {tool}: {raised[0][:200]}")
    elif finished and "lse-fuzz-probe" not in output:
        tail = " ".join(output.strip().splitlines()[-2:])[:200]
        notes.append(f"{tool} did not run the probes: {tail or 'no output'}")
    return notes


def _sanitized(target: str, options: list[str], extra: dict[str, list[str]], executable: str,
               outputs: dict[str, tuple[str, bool]], limit: str, decided: str | None = None) -> MemoryReport:
    """The tools' report; ``decided``: the tool whose finding stopped the others (Probing._until_decided)."""
    report = MemoryReport("compute-sanitizer " + ", ".join(outputs))
    for tool, (output, finished) in outputs.items():  # memcheck's finding first: an access out of bounds is the worse
        report.probes = max(report.probes, _probes_in(output))
        finding = sanitizer.parse(output, tool)
        if finding is not None and report.finding is None:
            report.finding = finding
            report.replay = replay_command(target, tool, [*options, *extra.get(tool, [])], executable)
        if finding is None and decided not in (None, tool):
            report.notes.append(f"{tool} stopped at {decided}'s finding, which decides the verdict")
        elif finding is None:
            report.notes += _notes_of(tool, output, finished, limit)
        others = sanitizer.unjudged(output, tool)
        if others:
            report.notes.append(f"{tool} reported {len(others)} read{'s' * (len(others) > 1)} of uninitialized memory "
                                f"inside a library's own kernel ({others[0].function}, probe {others[0].probe!r}), "
                                f"not judged: the library's scratch, not the implementation's kernels or result")
    return report


def _interpreted(target: str, options: list[str], tools: list[str], output: str, finished: bool,
                 limit: str) -> MemoryReport:
    """No compute-sanitizer: the probes ran on the CPU, in Triton's interpreter, with the CPU's checks."""
    report = MemoryReport("the CPU interpreter's memory checks (no compute-sanitizer found)")
    report.probes = _probes_in(output)
    probe = ""
    for line in output.splitlines():
        started = sanitizer.PROBE_LINE.match(line)  # not " start " anywhere: a violation's text may hold it
        if started:
            probe = started.group(2)
        elif line.startswith("lse-fuzz-probe ") and " violation " in line:
            try:
                violation = OutOfBounds.from_dict(json.loads(line.split(" violation ", 1)[1]))
            except ValueError:
                violation = None
            if violation is not None and violation.check in {TOOLS[tool] for tool in tools}:
                report.finding = Finding(violation.check, "interpreter", f"{violation.title} {violation.access}",
                                         [f"at {violation.kernel} in {violation.line}", violation.where],
                                         probe=probe, errors=violation.lanes)
                report.replay = f"python -m {_PROBE_MODULE} {target} --interpreter {' '.join(options)}"
                break
    if report.finding is None:
        report.notes += _notes_of("the interpreter", output, finished, limit)
    return report

