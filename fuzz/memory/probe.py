"""The memory phase's child: call an implementation on fixed probe inputs, one line per step.

    python -m fuzz.memory.probe TARGET --device cuda [--dtype float32] [--also float16,float64] [--max-n N]
                                [--contiguous] [--huge] [--inputs JSON | --then DIR] [--interpreter]

Run under compute-sanitizer (memcheck, initcheck) by :mod:`fuzz.memory.phase`, with PyTorch's
caching allocator off, so that every tensor is an allocation of its own and a read or write one
element past it lies outside every allocation. Each probe prints ``lse-fuzz-probe I start DESC``,
then, after the call and a synchronize, ``lse-fuzz-probe I result`` before it reads the result on
the GPU (a kernel's read, which initcheck judges: a result holding bytes nothing wrote), then
``lse-fuzz-probe I done``; the sanitizer's reports fall between the lines of the probe they
belong to. A call that raises prints ``lse-fuzz-probe I raised TYPE: MESSAGE`` and ends the run
(after an illegal address a CUDA context is unusable).

An implementation with autotuned kernels runs each probe once per config (up to
:data:`MAX_CONFIGS`), pinned as the fuzzing pins them (:mod:`fuzz.interpreter.autotune`): each
config's accesses are checked, on a GPU and in the interpreter alike, and nothing is benchmarked.

``--interpreter`` is the fallback where compute-sanitizer is absent: the same probes on the CPU in
Triton's interpreter, each call judged by ``memory_bounds`` and ``uninitialized_read``
(:mod:`fuzz.interpreter.bounds`); a violation prints ``lse-fuzz-probe I violation JSON``.

Every probe's storage is written in full before the call (padding included): only the
implementation's own allocations can hold bytes nothing wrote. Only probes inside the declared
contract run: none wider than ``--max-n`` columns, no padded view with ``--contiguous``.

``--huge`` adds two views whose last element lies 2**31 elements past their first (a huge row
stride, a huge column stride), each at the start of its own allocation: an offset computed in
32 bits wraps to an address before the allocation, which memcheck sees (the fuzzer's own huge
views start 2**31 elements into their storage so that the wrapped read lands inside it and spoils
a value instead). After the fixed probes come the run's own inputs (:func:`replay_inputs`), given
as ``--inputs JSON`` or, with ``--then DIR``, read from ``DIR/inputs.json`` once the fuzzing that
found them ended (the process waits for it, so that the tool's start is paid beside the fuzzing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

PREFIX = "lse-fuzz-probe"
INPUTS = "inputs.json"
"""The file in ``--then DIR`` that hands the probe process the run's inputs (written whole, once)."""


ELEMENT_SIZE_PROBES = ("33 x 257", "3 x 8192, row 1 all -inf, row 2's first half -inf")
"""The probes run again in each other element size the contract admits (``--also``). A kernel that
sizes its tiles in bytes (the reference's 16 KiB) gives a 2-byte dtype twice the elements per tile of
a 4-byte one, so a row block rounded past M, or a split row's last block of rows, comes in one size
and not in another: on an H100 a store one row past a split row's partials (``rows <= M``) ran only
with 16-bit input, where the float32 probes saw nothing and the CPU's checks caught it."""


def probes(dtype, device, only: tuple[str, ...] | None = None) -> list[tuple[str, object]]:
    """(description, input): the shapes where memory bugs with right values live. Tails past a
    power of two, rows past a multiple of a row block (a grid rounded up), a padded view (a read
    past a row lands in the padding, a read past the last row past the allocation), and rows
    long enough to be split with partials of all -inf (a partial that is skipped, not stored).
    ``only``: those of these descriptions (none other is built)."""
    import torch  # noqa: PLC0415

    def randn(rows: int, cols: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        return (torch.randn(rows, cols, generator=generator) * 3).to(dtype).to(device)

    def split():
        x = randn(3, 8192, 6)
        x[1] = -float("inf")  # every partial of the row empty
        x[2, :4096] = -float("inf")  # its first half's partials empty
        return x

    made = {"1 x 1": lambda: randn(1, 1, 0), "3 x 5": lambda: randn(3, 5, 1), "7 x 100": lambda: randn(7, 100, 2),
            "33 x 257": lambda: randn(33, 257, 3), "257 x 3": lambda: randn(257, 3, 4),
            "5 x 100, a view of rows padded to 128": lambda: randn(5, 128, 5)[:, :100],
            "3 x 8192, row 1 all -inf, row 2's first half -inf": split, "2 x 65536": lambda: randn(2, 65536, 7)}
    return [(description, make()) for description, make in made.items() if only is None or description in only]


def huge_probes(dtype, device) -> list[tuple[str, object]]:
    """Views whose last element lies 2**31 elements past their first, each at the start of an
    allocation of its own: a 32-bit ``row * stride_row`` or ``col * stride_col`` wraps to an address
    before it (see the module docstring)."""
    import torch  # noqa: PLC0415

    from ..layouts import Layout, LayoutKind  # noqa: PLC0415

    values = (torch.randn(3, 4, generator=torch.Generator().manual_seed(8)) * 3).to(dtype)
    return [(f"{rows} x {cols}, {kind.value.replace('_', ' ')} past 2**31, at the start of its allocation",
             at_allocation_start(Layout(kind), values[:rows, :cols], device))
            for kind, rows, cols in ((LayoutKind.HUGE_OFFSET, 3, 4), (LayoutKind.HUGE_COLUMN_STRIDE, 2, 3))]


def at_allocation_start(layout, values, device):
    """``layout``'s view of ``values``, a huge one moved to the start of its storage (no storage
    offset), so that an address a 32-bit offset wrapped to lies outside every allocation."""
    if not layout.is_huge:
        return layout.materialize(values, device)
    from ..gpu_memory import huge_storage  # noqa: PLC0415

    strides, offset, size = layout.strides(*values.shape)
    view = huge_storage(max(size - offset, 1), values.dtype, device).as_strided(tuple(values.shape), strides, 0)
    view.copy_(values.to(device))
    return view


def replay_inputs(entries: list[dict], device) -> list[tuple[str, object]]:
    """The run's own inputs: ``{"description", "reproducer": PATH}`` (a saved failing example, its
    values) or ``{"description", "shape", "dtype", "layout"}`` (a shape drawn, random values). An
    entry that cannot be rebuilt as a 2-D input is left out."""
    import torch  # noqa: PLC0415

    from ..layouts import Layout  # noqa: PLC0415
    from ..reproducer import load_reproducer  # noqa: PLC0415

    found = []
    for entry in entries:
        try:
            if entry.get("reproducer"):
                saved = load_reproducer(entry["reproducer"])
                if saved.batch is not None:
                    continue
                values, layout = saved.values, saved.layout
            else:
                generator = torch.Generator().manual_seed(9)
                values = (torch.randn(*entry["shape"], generator=generator) * 3).to(getattr(torch, entry["dtype"]))
                layout = Layout.from_dict(entry["layout"])
            found.append((str(entry["description"]), at_allocation_start(layout, values, device)))
        except Exception as exc:  # noqa: BLE001 (a note: the fixed probes ran)
            print(f"{PREFIX} skipped {entry.get('description')}: {type(exc).__name__}: {exc}", flush=True)
    return found


def one_flush_buffer() -> None:
    """Make Triton's benchmarks (an autotuner's, on each new key) reuse one L2-flush buffer: for
    autotuned kernels :func:`configs` does not find (a library's), which still benchmark.

    ``triton.testing.do_bench`` takes a fresh 256 MiB buffer from the driver for every benchmark
    run. Under compute-sanitizer, with PyTorch's caching allocator off, the GPU memory such a buffer
    held does not come back while the process lives: measured on an H100, a probe run of a kernel
    autotuning four configs grew by 288 MiB a benchmark, to 8.7-9.9 GiB, against 0.7 GiB for an
    untuned kernel; eight checks side by side, two such runs each, filled the GPU and the checks
    beside them ran out of memory (a correct kernel graded a crash). The flush only makes timings
    fair, and timings under a sanitizer mean nothing; every config is still benchmarked, so each
    one's accesses are still checked. Triton without this hook is left as it is. (Measured with
    this buffer alone, before the probes pinned configs: 1.06 GiB per probe process at most.)"""
    try:
        from triton.runtime import driver  # noqa: PLC0415

        active = driver.active
        make = active.get_empty_cache_for_benchmark
    except Exception:  # noqa: BLE001 - another Triton: its benchmarks as they are
        return
    made = []

    def reused():
        if not made:
            made.append(make())
        return made[0]

    active.get_empty_cache_for_benchmark = reused


def _handed(directory: str, parent: int | None) -> list[dict]:
    """The entries the phase hands over in ``directory``/inputs.json once the fuzzing ended; none
    if the phase (``parent``) is gone first."""
    path = os.path.join(directory, INPUTS)
    with open(os.path.join(directory, f"waiting.{os.getpid()}"), "w"):
        pass  # the fixed probes are done (what a test of the phase waits for)
    while not os.path.exists(path):
        if parent is not None and not _alive(parent):
            return []
        time.sleep(0.05)
    with open(path) as handle:
        return json.load(handle)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.memory.probe", description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--also", default="", metavar="DTYPES",
                        help="comma-separated dtypes of other element sizes: ELEMENT_SIZE_PROBES again in each")
    parser.add_argument("--max-n", type=int, default=None)
    parser.add_argument("--contiguous", action="store_true", help="contiguous inputs only (the contract's layouts)")
    parser.add_argument("--huge", action="store_true", help="add the views past 2**31 elements")
    parser.add_argument("--inputs", default=None, help="the run's inputs, a JSON list (see replay_inputs)")
    parser.add_argument("--then", default=None, metavar="DIR", help="wait for DIR/inputs.json after the probes")
    parser.add_argument("--parent", type=int, default=None, help="stop waiting once this process is gone")
    parser.add_argument("--interpreter", action="store_true")
    args = parser.parse_args(argv)
    if args.interpreter:
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported
    import torch  # noqa: PLC0415

    from ..target import load_target  # noqa: PLC0415

    device = torch.device("cpu" if args.interpreter else args.device)
    if device.type == "cuda":
        one_flush_buffer()
    impl = load_target(args.target)
    pin, count = configs(impl)
    dtype = getattr(torch, args.dtype)
    fixed = probes(dtype, device) + (huge_probes(dtype, device) if args.huge else [])
    fixed += [(f"{description}, {name}", x) for name in filter(None, args.also.split(","))
              for description, x in probes(getattr(torch, name), device, ELEMENT_SIZE_PROBES)]
    inputs = each_config([(description, x) for description, x in fixed if (args.max_n is None or x.shape[1] <= args.max_n)
                          and (not args.contiguous or x.is_contiguous())], count)
    judging = None
    if args.interpreter:
        from ..interpreter import bounds  # noqa: PLC0415
        judging = bounds
    print(f"{PREFIX} probes {len(inputs)}", flush=True)
    if not _call_each(impl, inputs, 0, device, judging, pin):
        return 0
    entries = json.loads(args.inputs) if args.inputs else _handed(args.then, args.parent) if args.then else []
    handed = each_config(replay_inputs(entries, device), count)
    if handed:
        print(f"{PREFIX} probes {len(inputs) + len(handed)}", flush=True)
        _call_each(impl, handed, len(inputs), device, judging, pin)
    return 0


MAX_CONFIGS = 8
"""Configs each probe runs an autotuned implementation with, at most: the choices 0-7 of
:func:`fuzz.interpreter.autotune.pinned`, every config of a kernel of up to eight."""


def configs(impl):
    """``(pin, count)``: an implementation with autotuned kernels runs each probe once per config,
    pinned as the fuzzing pins them (``pin(choice)``, a context), ``count`` of them; else
    ``(None, 1)``. Left to itself the autotuner would benchmark every config on every new key
    under the tools (dozens of runs each, a GPU timer's flush buffer each time), and in Triton's
    interpreter it runs its first config only."""
    from ..interpreter import autotune  # noqa: PLC0415

    pin, count, _ = autotune.tuning(impl)
    count = min(count, MAX_CONFIGS)
    return (pin, count) if count > 1 else (None, 1)


def each_config(inputs: list[tuple[str, object]], count: int) -> list[tuple[str, object, int | None]]:
    """``(description, x, choice)``: each input once per config (``choice`` None: nothing pinned)."""
    if count <= 1:
        return [(description, x, None) for description, x in inputs]
    return [(f"{description}, config {choice + 1} of {count}", x, choice)
            for description, x in inputs for choice in range(count)]


def _call_each(impl, inputs: list[tuple[str, object, int | None]], first: int, device, judging, pin=None) -> bool:
    """Call ``impl`` on each input (pinned to its config), a start and an end line around each
    call (see the module docstring); False once a call raised (after an illegal address a CUDA
    context is unusable)."""
    import contextlib  # noqa: PLC0415

    for index, (description, x, choice) in enumerate(inputs, start=first):
        print(f"{PREFIX} {index} start {description}", flush=True)
        try:
            with pin(choice) if pin is not None and choice is not None else contextlib.nullcontext():
                _call_one(impl, x, index, device, judging)
        except Exception as exc:  # noqa: BLE001 (the candidate's: reported, never raised)
            violation = judging.violation_in(exc) if judging is not None else None
            if violation is not None:
                print(f"{PREFIX} {index} violation {json.dumps(violation.to_dict())}", flush=True)
                continue
            message = " ".join(str(exc).split())[:300]
            print(f"{PREFIX} {index} raised {type(exc).__name__}: {message}", flush=True)
            return False
        print(f"{PREFIX} {index} done", flush=True)
    return True


def _call_one(impl, x, index: int, device, judging) -> None:
    """One call: on a GPU, its result then read by a kernel (initcheck sees reads by kernels, so a
    result holding bytes nothing wrote, a row skipped, is reported, as the CPU refuses it); in
    Triton's interpreter, the CPU's bounds and initialization checks around it."""
    import torch  # noqa: PLC0415

    if judging is not None:
        with judging.judging(True, initialized=True):
            judging.judge_result(impl(x))
        return
    out = impl(x)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        print(f"{PREFIX} {index} result", flush=True)
        # An elementwise kernel reads every element, and nothing else: a reduction over it (an
        # ``.any()``) could add reads of its own scratch, which initcheck would lay at the result.
        for tensor in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(tensor, torch.Tensor) and tensor.is_cuda and tensor.numel():
                torch.ne(tensor.detach(), tensor.detach())
        torch.cuda.synchronize(device)

if __name__ == "__main__":
    sys.exit(main())
