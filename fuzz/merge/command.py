"""``lse-fuzz check TARGET --op merge_state|combine``: an op's run in a child process.

The child (:mod:`fuzz.merge.child`) loads the target and runs :func:`fuzz.merge.check_op`; this
process waits for it, so that an implementation that crashes (a segfault, an abort, ``os._exit``)
or hangs past ``--worker-timeout`` ends the run with a verdict (CRASH, TIMEOUT) instead of taking the
command down. Bad input (a target that does not load, a wrong signature, a result of the wrong
structure, an option of the row LSE) is one line and exit code 2, as for the row LSE.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reference.errors import InvalidArgument

from .. import defaults, option_table, validate
from ..isolation import release_signals
from ..outcomes import CHECK_EXIT_CODES, ExitCode
from .child_run import run_in_child
from .ops import layouts, lse_base, op, v_dtypes

__all__ = ["CLI_OPTIONS", "refuse_row_options", "run_check", "run_options"]

CLI_OPTIONS = ("budget", "seed", "device", "checks", "dtypes", "layouts", "profile", "shrink_seconds", "reproducers",
               "json", "timeout", "op", "lse_base")
"""The options of ``lse-fuzz check`` an op's run takes; the others are the row LSE's."""


def refuse_row_options(args: argparse.Namespace, name: str, command: str, allowed: tuple[str, ...]) -> None:
    """InvalidArgument naming the first option given that ``command --op name`` does not take."""
    for entry in option_table.OPTIONS:
        if command in entry.commands and entry.name not in allowed and hasattr(args, entry.name) \
                and getattr(args, entry.name) != entry.default_for(command):
            taken = ", ".join(option_table.cli_name(o) for o in allowed if o in {e.name for e in option_table.OPTIONS})
            raise InvalidArgument(f"{entry.flag}: an option of the row LSE; {command} --op {name} takes {taken}.")


def run_options(args: argparse.Namespace, name: str, *, reproducer_dir: str) -> dict:
    """What every op run of a command takes (the child's options but its target), validated here
    so that a bad value is one line before any child starts: the command's own values, and the
    defaults for what it has no option for (``mutants`` fixes the base, the dtypes and the layouts)."""
    what = op(name, flag="--op")
    checks = getattr(args, "checks", None)
    unknown = [c.strip() for c in checks.split(",") if c.strip() not in what.checks] if checks is not None else []
    if unknown:
        raise InvalidArgument(f"--checks={checks!r}; --op {what.name} has the checks {', '.join(what.checks)}.")
    dtypes, shapes = getattr(args, "dtypes", None), getattr(args, "layouts", None)
    v_dtypes(dtypes, flag="--dtypes")
    layouts(shapes, flag="--layouts")
    return {"op": what.name, "budget": validate.integer(args.budget, name="--budget", low=1),
            "seed": validate.integer(args.seed, name="--seed", low=0),
            "device": str(validate.device(args.device, name="--device")),
            "lse_base": lse_base(getattr(args, "lse_base", "e"), flag="--lse-base"), "checks": checks,
            "dtypes": dtypes, "layouts": shapes, "profile": getattr(args, "profile", None),
            "shrink_seconds": validate.seconds(args.shrink_seconds, name="--shrink-seconds", optional=True, zero=True),
            "reproducer_dir": reproducer_dir}


def _child_options(args: argparse.Namespace, target: str) -> dict:
    refuse_row_options(args, op(args.op, flag="--op").name, "check", CLI_OPTIONS)
    if args.json is not None and not Path(args.json).parent.is_dir():
        raise InvalidArgument(f"--json={args.json!r}: the directory {str(Path(args.json).parent)!r} does not exist.")
    return {**run_options(args, args.op, reproducer_dir=args.reproducers), "target": target}


def run_check(args: argparse.Namespace, target: str) -> int:
    """The ``check`` command for ``--op`` other than lse: the exit code."""
    release_signals()  # held by the command line for the row LSE's guard; here the child is judged by its status
    options = _child_options(args, target)
    timeout = validate.seconds(defaults.OP_RUN_TIMEOUT if args.timeout is None else args.timeout,
                               name="--worker-timeout")
    print(f"lse-fuzz check {target} --op {options['op']} on {options['device']} (budget {options['budget']}, "
          f"seed {options['seed']}, LSE base {options['lse_base']})", file=sys.stderr, flush=True)
    ended = run_in_child(options, timeout=timeout)
    if ended.internal is not None:
        print(f"lse-fuzz: internal error (no verdict on the implementation): {ended.internal}", file=sys.stderr)
        return ExitCode.INTERNAL
    print(ended.text)
    if args.json and ended.result is not None:
        Path(args.json).write_text(json.dumps(ended.result, indent=2, sort_keys=True) + "\n")
    return CHECK_EXIT_CODES[ended.verdict]
