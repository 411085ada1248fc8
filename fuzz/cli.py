"""The ``lse-fuzz`` command: argument parsing and dispatch only (``python -m fuzz`` is internal).

Each sub-command lives in its own module ``fuzz/commands/<name>.py`` exposing ``add_parser(subparsers)``
and ``run(args) -> int``; heavy imports (torch, triton) happen inside ``run``. Bad input to the tool
itself ends with one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ._version import __version__
from .isolation import release_signals
from .outcomes import ExitCode

# Sub-command name -> module under fuzz.commands; the order is the order of --help.
COMMANDS = ("mutants", "mutate", "check", "grade", "replay")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lse-fuzz",
        description="Correctness fuzzer and mutation-test harness for row-wise LogSumExp kernels.",
    )
    parser.add_argument("--version", action="version", version=f"lse-fuzz {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"fuzz.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"fuzz.commands.{name}":
                raise
            continue
        sub = module.add_parser(subparsers)
        sub.set_defaults(_run=module.run, _takes_signals=getattr(module, "TAKES_SIGNALS", False),
                         _uses_workers=getattr(module, "uses_workers", None),
                         _supervise=getattr(module, "supervise", None))
    return parser


def _interpreter_for_cpu(args: argparse.Namespace) -> None:
    """``--device cpu``: Triton's interpreter in this process (the fuzzer's own reference kernel)
    and in every fork server and worker it starts, whatever GPU the machine has. Chosen here, before
    anything imports Triton, whose mode is fixed at import; a TRITON_INTERPRET the user set wins."""
    if str(getattr(args, "device", None) or "").strip().lower().startswith("cpu"):
        os.environ.setdefault("TRITON_INTERPRET", "1")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_takes_signals", False):
        release_signals()  # held by the entry point for the commands that guard them (fuzz.isolation.guard.signals)
    if not getattr(args, "_run", None):
        parser.print_help()
        return ExitCode.USAGE
    _interpreter_for_cpu(args)
    if args._supervise is None or argv is not None:
        return _run(args)  # called with arguments (a test, a script): this process is not the command's own
    # The command is this process's own: it supervises the one that runs it (fuzz.isolation.guard.supervisor).
    supervision = args._supervise(args)
    return supervision.code if supervision.code is not None else supervision.ended(_run(args))


def _run(args: argparse.Namespace) -> int:
    if args._uses_workers is not None and args._uses_workers(args):
        # The workers' fork server imports torch and Triton (seconds): started now, before this
        # process imports them too, the two imports run side by side.
        from .isolation import expected_worker_environment, prestart

        prestart(expected_worker_environment())
    from reference.errors import InvalidArgument  # imports torch: after the early start

    if os.environ.get("TRITON_INTERPRET") == "1":  # this process's own kernels (the reference) too
        from .interpreter.numpy_compat import install

        install()

    try:
        return int(args._run(args))
    except InvalidArgument as exc:
        print(f"lse-fuzz: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("lse-fuzz: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the tool's own failure: one paragraph, the traceback kept
        print(_internal_error(exc), file=sys.stderr)
        return ExitCode.INTERNAL


def _internal_error(exc: Exception) -> str:
    """What the command says when lse-fuzz itself failed (no verdict on any implementation): the
    error in one line, and where its traceback was saved for a report."""
    import tempfile
    import traceback

    with tempfile.NamedTemporaryFile("w", prefix="lse-fuzz-internal-error-", suffix=".txt", delete=False) as saved:
        saved.write("".join(traceback.format_exception(exc)))
    first = (str(exc).strip().splitlines() or [""])[0]
    return (f"lse-fuzz: internal error: {type(exc).__name__}: {first}\n"
            f"  lse-fuzz itself failed; this is no verdict on the implementation. If the machine is\n"
            f"  short of something (GPU memory held by other jobs, disk), run again with fewer jobs;\n"
            f"  otherwise please report it with the traceback saved in {saved.name}")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
