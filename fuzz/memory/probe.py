"""The memory phase's child: call an implementation on fixed probe inputs, one line per step.

    python -m fuzz.memory.probe TARGET --device cuda [--dtype float32] [--max-n N] [--contiguous] [--interpreter]

Run under compute-sanitizer (memcheck, initcheck) by :mod:`fuzz.memory.phase`, with PyTorch's
caching allocator off, so that every tensor is an allocation of its own and a read or write one
element past it lies outside every allocation. Each probe prints ``lse-fuzz-probe I start DESC``,
then, after the call and a synchronize, ``lse-fuzz-probe I done``; the sanitizer's reports fall
between the two lines of the probe they belong to. A call that raises prints ``lse-fuzz-probe I
raised TYPE: MESSAGE`` and ends the run (after an illegal address a CUDA context is unusable).

``--interpreter`` is the fallback where compute-sanitizer is absent: the same probes on the CPU in
Triton's interpreter, each call judged by ``memory_bounds`` and ``uninitialized_read``
(:mod:`fuzz.interpreter.bounds`); a violation prints ``lse-fuzz-probe I violation JSON``.

Every probe's storage is written in full before the call (padding included): only the
implementation's own allocations can hold bytes nothing wrote. Only probes inside the declared
contract run: none wider than ``--max-n`` columns, no padded view with ``--contiguous``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

PREFIX = "lse-fuzz-probe"


def probes(dtype, device) -> list[tuple[str, object]]:
    """(description, input): the shapes where memory bugs with right values live. Tails past a
    power of two, rows past a multiple of a row block (a grid rounded up), a padded view (a read
    past a row lands in the padding, a read past the last row past the allocation), and rows
    long enough to be split with partials of all -inf (a partial that is skipped, not stored)."""
    import torch  # noqa: PLC0415

    def randn(rows: int, cols: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        return (torch.randn(rows, cols, generator=generator) * 3).to(dtype).to(device)

    found = [("1 x 1", randn(1, 1, 0)), ("3 x 5", randn(3, 5, 1)), ("7 x 100", randn(7, 100, 2)),
             ("33 x 257", randn(33, 257, 3)), ("257 x 3", randn(257, 3, 4))]
    padded = randn(5, 128, 5)
    found.append(("5 x 100, a view of rows padded to 128", padded[:, :100]))
    split = randn(3, 8192, 6)
    split[1] = -float("inf")  # every partial of the row empty
    split[2, :4096] = -float("inf")  # its first half's partials empty
    found.append(("3 x 8192, row 1 all -inf, row 2's first half -inf", split))
    found.append(("2 x 65536", randn(2, 65536, 7)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.memory.probe", description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--max-n", type=int, default=None)
    parser.add_argument("--contiguous", action="store_true", help="contiguous inputs only (the contract's layouts)")
    parser.add_argument("--interpreter", action="store_true")
    args = parser.parse_args(argv)
    if args.interpreter:
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported
    import torch  # noqa: PLC0415

    from ..target import load_target  # noqa: PLC0415

    impl = load_target(args.target)
    device = torch.device("cpu" if args.interpreter else args.device)
    inputs = [(description, x) for description, x in probes(getattr(torch, args.dtype), device)
              if (args.max_n is None or x.shape[1] <= args.max_n) and (not args.contiguous or x.is_contiguous())]
    judging = None
    if args.interpreter:
        from ..interpreter import bounds  # noqa: PLC0415
        judging = bounds
    print(f"{PREFIX} probes {len(inputs)}", flush=True)
    for index, (description, x) in enumerate(inputs):
        print(f"{PREFIX} {index} start {description}", flush=True)
        try:
            if judging is None:
                impl(x)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
            else:
                with judging.judging(True, initialized=True):
                    judging.judge_result(impl(x))
        except Exception as exc:  # noqa: BLE001 (the candidate's: reported, never raised)
            violation = judging.violation_in(exc) if judging is not None else None
            if violation is not None:
                print(f"{PREFIX} {index} violation {json.dumps(violation.to_dict())}", flush=True)
                continue
            message = " ".join(str(exc).split())[:300]
            print(f"{PREFIX} {index} raised {type(exc).__name__}: {message}", flush=True)
            return 0
        print(f"{PREFIX} {index} done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
