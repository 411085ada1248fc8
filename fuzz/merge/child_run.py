"""An op's run in a child process (:mod:`fuzz.merge.child`), judged by how the child ended: what
``lse-fuzz check --op`` and the merge mutants' run (:mod:`fuzz.merge.mutants`) share."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reference.errors import InvalidArgument

from ..outcomes import Verdict

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


def run_in_child(options: dict, *, timeout: float) -> ChildRun:
    """Run ``check_op`` with ``options`` (``target`` included) in a child process, killed after
    ``timeout`` seconds. InvalidArgument (one line) for bad input the child found."""
    import time

    target, op = options["target"], options["op"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lse-fuzz-op-") as scratch:
        report = Path(scratch) / "result.json"
        child = subprocess.Popen([sys.executable, "-m", "fuzz.merge.child", json.dumps(options), str(report)],
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return ChildRun(Verdict.TIMEOUT, f"{Verdict.TIMEOUT.label} {target} (--op {op}): the run did not end "
                            f"within --worker-timeout {timeout:g} s (a call hung, or the run is slower than that)",
                            seconds=time.perf_counter() - started)
        data = json.loads(report.read_text()) if report.is_file() else None
        ready = report.with_name(report.name + ".ready").is_file()
    seconds = time.perf_counter() - started
    if data is None and not ready:  # the child ended before its own imports were done: ours, not the kernel's
        return ChildRun(None, "", internal=f"the run's process ended (status {child.returncode}) before it loaded "
                        f"the implementation:\n{stderr[-_TAIL:]}", seconds=seconds)
    if data is None:  # the implementation ended its process: a signal, os._exit, sys.exit
        code = child.returncode
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        return ChildRun(Verdict.CRASH, f"{Verdict.CRASH.label} {target} (--op {op}): the process running the "
                        f"implementation {how} before the run ended\n  stderr (last lines):\n{stderr[-_TAIL:]}",
                        seconds=seconds)
    if "usage" in data:
        raise InvalidArgument(data["usage"])
    if "internal" in data:
        return ChildRun(None, "", internal=data["internal"], seconds=seconds)
    return ChildRun(Verdict(data["verdict"]), data["summary"], data["result"], seconds=seconds)
