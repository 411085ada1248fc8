"""``--tests CMD``: the user's own test command against a mutant (a job of the worker pool).

The command runs in an *overlay* of the project (``root``): a temporary directory of symbolic links
to every entry of the root, except along the path to the mutated file, where directories are real,
their files copied, and the mutated file written in place of the original. So the command sees the project exactly
as it is with one file edited, several mutants run at once, and the real files are never touched.
The overlay comes first on ``PYTHONPATH`` and is the working directory; ``LSE_FUZZ_MUTANT`` names
the mutant; bytecode is not written (a ``__pycache__`` may be a link into the real tree).

Exit status 0 means the tests passed: the mutant survived them. Anything else killed it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["run_tests_job"]

OUTPUT_TAIL = 4000


def _overlay(root: Path, files: dict[str, str]) -> Path:
    """A linked copy of ``root`` with ``files`` (path relative to root -> text) written in."""
    overlay = Path(tempfile.mkdtemp(prefix="lse-fuzz-tests-"))
    real_dirs: dict[Path, set[str]] = {Path("."): set()}
    for relative in files:
        parts = Path(relative).parts
        for depth in range(len(parts)):
            real_dirs.setdefault(Path(*parts[:depth]) if depth else Path("."), set()).add(parts[depth])
    for directory, real_entries in real_dirs.items():
        (overlay / directory).mkdir(parents=True, exist_ok=True)
        for entry in os.scandir(root / directory):
            if entry.name in real_entries or entry.name == "__pycache__":
                continue
            if entry.is_file():
                # Copied, not linked: Python resolves a script's symlink before it puts the script's
                # directory first on sys.path, which would import the original beside it.
                shutil.copy2(entry.path, overlay / directory / entry.name)
            else:
                os.symlink(entry.path, overlay / directory / entry.name)
    for relative, text in files.items():
        (overlay / relative).write_text(text)
    return overlay


def run_tests_job(payload: dict) -> dict:
    """Run ``payload["command"]`` in an overlay of ``payload["root"]`` with ``payload["files"]``;
    stopped after ``payload["timeout"]`` seconds. Returns exit code, seconds and the output's tail."""
    root = Path(payload["root"])
    overlay = _overlay(root, payload.get("files") or {})
    env = dict(payload.get("env") or os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(overlay), *filter(None, [env.get("PYTHONPATH", "")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["LSE_FUZZ_MUTANT"] = payload.get("mutant") or ""
    started = time.monotonic()
    try:
        process = subprocess.Popen(payload["command"], shell=True, cwd=overlay, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            output, _ = process.communicate(timeout=payload.get("timeout"))
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            timed_out = True
    finally:
        shutil.rmtree(overlay, ignore_errors=True)
    text = output.decode(errors="replace")
    return {"exit": None if timed_out else process.returncode, "timeout": timed_out,
            "seconds": round(time.monotonic() - started, 3), "output": text[-OUTPUT_TAIL:]}
