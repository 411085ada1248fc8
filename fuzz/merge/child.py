"""The child process of ``lse-fuzz check --op ...`` (:mod:`fuzz.merge.command`): loads the target,
runs :func:`fuzz.merge.check_op`, writes what it found as JSON to the file it was given.

    python -m fuzz.merge.child OPTIONS_JSON RESULT_PATH

The result file holds one of: ``{"usage": line}`` (bad input), ``{"internal": line}`` (the harness
failed) or ``{"verdict", "summary", "result"}``. No file, but ``RESULT_PATH.ready`` (written once the
harness's own modules imported): the implementation ended the process. Neither: the harness did.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from pathlib import Path


def _write(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    options, path = json.loads(argv[0]), Path(argv[1])
    # A clean mask whoever started this process: a grader's guard holds its signals blocked, and a
    # child inherits the mask (its timeout, Ctrl-C and a shell's kill must still end it).
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    try:
        if options["device"] == "cpu":
            os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton is imported
            from ..interpreter.numpy_compat import install

            install()
        from reference.errors import InvalidArgument

        from ..outcomes import verdict_of
        from ..target import load_target
        from .runner import check_op
    except Exception as exc:  # the harness's own modules: no verdict on the implementation
        _write(path, {"internal": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return 3
    # From here on, a process that ends without a result was ended by the implementation.
    path.with_name(path.name + ".ready").touch()
    target = options.pop("target")
    try:
        fn = load_target(target, name="TARGET")
        result = check_op(fn, target=target, **options)
    except InvalidArgument as exc:
        _write(path, {"usage": str(exc)})
        return 2
    except Exception as exc:  # the harness's own failure: no verdict on the implementation
        _write(path, {"internal": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return 3
    verdict = verdict_of(status=result.status)
    _write(path, {"verdict": verdict.value, "summary": result.summary(), "result": result.to_dict()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
