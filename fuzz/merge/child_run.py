"""An op's run in a child process (:mod:`fuzz.merge.child`), judged by how the child ended: what
``lse-fuzz check --op`` and the merge mutants' run (:mod:`fuzz.merge.mutants`) share."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reference.errors import InvalidArgument

from .. import defaults
from ..outcomes import Verdict
from .reproducer import load_op_reproducer, op_replay_command

__all__ = ["ChildRun", "run_in_child"]

_TAIL = 2000  # characters of the child's stderr a crash report shows


@dataclass(frozen=True)
class ChildRun:
    """How one run ended: its verdict, the report's text, and the run's JSON result (when it ended
    with one); ``internal``: the harness's own failure (no verdict on the implementation)."""

    verdict: Verdict | None
    text: str
    result: dict | None = None
    internal: str | None = None
    seconds: float = 0.0


def _left_behind(pending: Path, options: dict) -> str:
    """The example the child was running when it ended (saved before its calls), moved to the
    reproducers' folder: the report's lines naming it and its replay command, or "" if none."""
    if not pending.is_file():
        return ""
    saved = load_op_reproducer(pending)
    directory = Path(options.get("reproducer_dir") or defaults.REPRODUCER_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"lse-fuzz-{options['op']}-crash-{os.getpid()}-{int(time.time() * 1000)}.pt"
    shutil.move(str(pending), path)
    return (f"\n  input:    {saved.example('cpu').describe()}\n  replay:   "
            f"{op_replay_command(path, options['target'])}")


def run_in_child(options: dict, *, timeout: float, on_start: Callable[[int], None] | None = None) -> ChildRun:
    """Run ``check_op`` with ``options`` (``target`` included) in a child process, killed after
    ``timeout`` seconds; ``on_start`` is told its pid (a grader's guard blames signals by it).
    InvalidArgument (one line) for bad input the child found."""
    target, op = options["target"], options["op"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lse-fuzz-op-") as scratch:
        report, pending = Path(scratch) / "result.json", Path(scratch) / "pending.pt"
        child = subprocess.Popen([sys.executable, "-m", "fuzz.merge.child", json.dumps({**options, "pending": str(pending)}),
                                  str(report)], stderr=subprocess.PIPE, text=True, start_new_session=True)
        if on_start is not None:
            on_start(child.pid)
        try:
            _, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return ChildRun(Verdict.TIMEOUT, f"{Verdict.TIMEOUT.label} {target} (--op {op}): the run did not end "
                            f"within --worker-timeout {timeout:g} s (a call hung, or the run is slower than that)"
                            + _left_behind(pending, options), seconds=time.perf_counter() - started)
        data = json.loads(report.read_text()) if report.is_file() else None
        ready = report.with_name(report.name + ".ready").is_file()
        crash_input = _left_behind(pending, options) if data is None and ready else ""
    seconds = time.perf_counter() - started
    if data is None and not ready:  # the child ended before its own imports were done: ours, not the kernel's
        return ChildRun(None, "", internal=f"the run's process ended (status {child.returncode}) before it loaded "
                        f"the implementation:\n{stderr[-_TAIL:]}", seconds=seconds)
    if data is None:  # the implementation ended its process: a signal, os._exit, sys.exit
        code = child.returncode
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        return ChildRun(Verdict.CRASH, f"{Verdict.CRASH.label} {target} (--op {op}): the process running the "
                        f"implementation {how} before the run ended{crash_input}\n  stderr (last lines):\n"
                        f"{stderr[-_TAIL:]}", seconds=seconds)
    if "usage" in data:
        raise InvalidArgument(data["usage"])
    if "internal" in data:
        return ChildRun(None, "", internal=data["internal"], seconds=seconds)
    return ChildRun(Verdict(data["verdict"]), data["summary"], data["result"], seconds=seconds)
