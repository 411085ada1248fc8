"""The mutation worker: one implementation against the fuzz suite, in a process of its own.

    python -m fuzz.mutation_worker --target mutants.no_max_added:lse --out result.jsonl \\
        --budget 300 --seed 0 --device cpu --contract strict --cell all

Each ``--cell`` is one ``fuzz.check`` run (``all``, or comma-separated check names); after a cell
passes the fuzzer, the huge-offset probe of :mod:`fuzz.mutation` runs with the same checks. One
JSON line per cell is appended to ``--out`` as soon as the cell is judged, so the parent sees
which cells finished when a later one crashes or hangs. The parent maps these records (and the
exit status) to mutant statuses with :func:`fuzz.mutation.classify`; this module only reports.

Record fields: ``cell`` (index), ``checks``, ``outcome`` ("passed", "failed", "flaky", "raised",
"load_failed"), ``stage`` ("fuzz" or "huge_offset_probe"), ``check``, ``examples``, ``seconds``,
``message``, ``counterexample``, ``reproducer``, ``replay``, and for "raised"/"load_failed"
``exception``: the exception chain, outermost first, each with its type and the qualified names
of its classes (so the parent can tell a compilation error from a runtime error by type).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def exception_chain(exc: BaseException | None) -> list[dict]:
    """The exception and its causes (``raise ... from``) and contexts, outermost first."""
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        chain.append({"type": _qualified(type(exc)), "mro": [_qualified(c) for c in type(exc).__mro__],
                      "message": str(exc)[:2000]})
        exc = exc.__cause__ or exc.__context__
    return chain


class _Recorder:
    """Wraps the implementation to keep the exception object it raised (the runner keeps text)."""

    def __init__(self, impl) -> None:
        self.impl = impl
        self.last: BaseException | None = None

    def __call__(self, x):
        try:
            return self.impl(x)
        except BaseException as exc:
            self.last = exc
            raise


def _append(out: Path, record: dict) -> None:
    with open(out, "a") as handle:
        handle.write(json.dumps(record, default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _counterexample(example) -> dict | None:
    if example is None:
        return None
    return {"description": example.describe(), "shape": list(example.shape),
            "dtype": str(example.dtype).replace("torch.", ""), "layout": example.layout.to_dict()}


def _probe_examples(device, contract):
    """The huge-offset probe inputs (see fuzz.mutation.HUGE_OFFSET_PROBES)."""
    import torch

    from .layouts import Layout, LayoutKind
    from .mutation import HUGE_OFFSET_PROBES
    from .strategies import RECIPES, LseInput, RowSpec, row_values

    for probe in HUGE_OFFSET_PROBES:
        if contract.value == "finite" and not RECIPES[probe.recipe].finite:
            continue
        specs = (RowSpec(probe.recipe, probe.level),)
        values = row_values(specs, probe.rows, probe.cols, getattr(torch, probe.dtype), probe.seed)
        layout = Layout(kind=LayoutKind.HUGE_OFFSET, pad=probe.pad, offset=probe.OFFSET)
        x = layout.materialize(values, device)
        yield probe, LseInput(x=x, values=values, layout=layout, specs=specs, seed=probe.seed)
        del x


def run_probe(impl, *, checks, device, contract, reproducer_dir, target):
    """Run the huge-offset probe: (failure or None, its example, examples run, seconds, reproducer)."""
    from .checks import METAMORPHIC, CheckFailure, ImplError, Plan, run_checks
    from .reproducer import replay_command, save_reproducer

    started = time.perf_counter()
    metamorphic = [name for name in checks if name in METAMORPHIC] or [None]
    count = 0
    for probe, example in _probe_examples(device, contract):
        for name in metamorphic:
            count += 1
            plan = Plan(name, probe.seed)
            try:
                run_checks(impl, example, checks=checks, plan=plan)
            except (CheckFailure, ImplError) as failure:
                check = failure.check if isinstance(failure, CheckFailure) else None
                path = save_reproducer(reproducer_dir, example, plan, checks=tuple(checks), contract=contract,
                                       check=check, message=failure.message())
                failure.replay = replay_command(path, target)
                return failure, example, count, time.perf_counter() - started, path
    return None, None, count, time.perf_counter() - started, None


def run_cell(impl, recorder: _Recorder, *, index: int, checks, args) -> dict:
    import fuzz
    from .checks import CheckFailure, validate_checks
    from .strategies import Contract

    names = validate_checks(None if checks is None else checks)
    contract = Contract.parse(args.contract)
    record: dict = {"cell": index, "checks": list(names), "stage": "fuzz"}
    result = fuzz.check(recorder, budget=args.budget, seed=args.seed, device=args.device, contract=contract,
                        checks=names, reproducer_dir=args.reproducer_dir, target=args.target,
                        max_elements=args.max_elements)
    examples, seconds = result.examples, result.seconds
    failure, example, reproducer = result.failure, result.counterexample, result.reproducer
    outcome = {"passed": "passed", "failed": "failed", "flaky": "flaky", "error": "raised"}[result.status.value]
    if outcome == "passed" and args.huge_probe:
        failure, example, count, probe_seconds, reproducer = run_probe(
            recorder, checks=names, device=args.device, contract=contract,
            reproducer_dir=args.reproducer_dir, target=args.target)
        examples += count
        seconds += probe_seconds
        if failure is not None:
            record["stage"] = "huge_offset_probe"
            outcome = "failed" if isinstance(failure, CheckFailure) else "raised"
    record.update(outcome=outcome, examples=examples, seconds=round(seconds, 3))
    if failure is not None:
        record.update(
            check=failure.check if isinstance(failure, CheckFailure) else None,
            message=failure.message(),
            counterexample=_counterexample(example),
            reproducer=None if reproducer is None else str(reproducer),
            replay=getattr(failure, "replay", None),
        )
        if outcome == "raised":
            record["exception"] = exception_chain(recorder.last)
            record["traceback"] = getattr(failure, "text", "")
    return record


def _load_failure(target: str, exc: BaseException) -> dict:
    cause = exc.__cause__ or exc
    return {"outcome": "load_failed", "stage": "load", "examples": 0, "seconds": 0.0,
            "message": f"loading {target} failed: {exc}", "exception": exception_chain(cause),
            "traceback": "".join(traceback.format_exception(cause))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.mutation_worker", description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--budget", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--contract", default="strict")
    parser.add_argument("--reproducer-dir", type=Path, required=True)
    parser.add_argument("--no-huge-probe", dest="huge_probe", action="store_false")
    parser.add_argument("--max-elements", type=int, default=None)
    parser.add_argument("--cell", action="append", required=True, help="'all' or comma-separated check names")
    args = parser.parse_args(argv)
    cells = [None if cell == "all" else cell.split(",") for cell in args.cell]

    from reference._device import ensure_interpreter

    ensure_interpreter()
    from ._target import load_target

    try:
        impl = load_target(args.target)
    except Exception as exc:  # the target's own import failed (syntax error, compile error, ...)
        for index, checks in enumerate(cells):
            _append(args.out, {"cell": index, "checks": checks or ["all"], **_load_failure(args.target, exc)})
        return 0
    recorder = _Recorder(impl)
    for index, checks in enumerate(cells):
        recorder.last = None
        _append(args.out, run_cell(impl, recorder, index=index, checks=checks, args=args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
