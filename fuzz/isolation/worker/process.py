"""The candidate worker: loads the implementation under test and serves calls from the parent.

Runs in a child of the fork server (:mod:`fuzz.isolation.fork_server`), entry :func:`worker_main`; its
parent's side is :class:`fuzz.isolation.worker.proxy.IsolatedImpl`.
Messages (parent -> worker), each a JSON header plus raw frames (:mod:`fuzz.isolation.wire`):

  {"op": "call", "input": {...}, "released": [ids]}   + 1 frame: the input's storage bytes (or its
                                      view's bits; empty when the input is the parent's mapping),
                                      then, for a new mapping ("shared"), its descriptor (SCM_RIGHTS)
  {"op": "bench_prepare", ...}        generate a seeded input on the GPU and warm the candidate up
  {"op": "bench_run", "iters": n}     n calls back to back between two device synchronisations
  {"op": "release"}                   drop the input (a huge one's device memory) -> {"op": "released"}
  {"op": "close"}

Replies (worker -> parent):

  {"op": "ready"} | {"op": "load_failed", "message": ..., "chain": [...], "harness": bool}   after loading the target
  {"op": "returned", "output": {..., "id": n}, "held": [ids], "ops": {flag: [operators]}, "input_changed": bool}
                                      + output frame, + each held output's bytes now, + input frame if changed
  {"op": "raised", "kind": "exception" | "out_of_memory" | "file_size_limit" | "cuda_error" | "harness", "type",
   "message", "traceback", "chain", "emulation": {"construct", "reason"} | null, "memory": {...} | null}
                                      emulation: on the CPU, the emulator refused a construct
                                      (fuzz.interpreter.emulation.raised_by_emulator); memory: on the CPU, the
                                      bounds checker stopped an access (fuzz.interpreter.bounds.OutOfBounds, or its UninitializedRead)
  {"op": "exit", "code": n, "detail": ...}                                 the candidate called sys.exit
  {"op": "compiling", ...} / {"op": "compiled", ...}   before a reply: a compiler ran (compile_watch)
"""

from __future__ import annotations

import gc
import inspect
import json
import mmap
import os
import reprlib
import sys
import time
import traceback
import warnings
from multiprocessing.connection import Connection

import torch

from ...interpreter import autotune, bounds, specialization
from ...failures import exception_chain
from ...gpu_memory import MEMORY_WAIT, huge_storage, out_of_memory, sparse_huge_inputs, with_memory_retry
from ..wire import REBUILDING_INPUT, bits, distinct, dtype_from_name, dtype_name, recv_message, send_message, storage_bytes
from . import compile_watch
from .appearance import look_ordinary
from .bench_input import seeded_input
from .error_kind import emulator_refusal, error_kind, memory_violation
from .op_record import OpRecord, keep_out_of_dynamo, recording
from .shared_input import receive_descriptor


def worker_main(channel_fd: int, args: dict) -> int:
    """Load the target, then serve calls until the parent closes the channel."""
    look_ordinary()  # before the candidate's import runs: no command line naming the grader
    conn = Connection(channel_fd)
    device = args["device"]
    if device == "cpu":
        # CPU tensors need Triton's interpreter, whatever GPU this machine has; set before the
        # candidate's @triton.jit decorators run.
        os.environ["TRITON_INTERPRET"] = "1"
    if args.get("threads"):
        torch.set_num_threads(int(args["threads"]))
    started = time.perf_counter()
    # Compiling is not hanging: the parent stops a request's clock while a compiler runs (an
    # import may compile too, so before the candidate's module is loaded).
    compile_watch.install(lambda notice: send_message(conn, notice))
    keep_out_of_dynamo()  # once the candidate imports torch._dynamo, if ever
    try:
        impl = _load(args["target"])
    except SystemExit as exc:
        send_message(conn, {"op": "load_failed", "message": f"importing it called sys.exit({exc.code!r})"})
        return 0
    except _LoadError as exc:
        send_message(conn, {"op": "load_failed", "message": str(exc), "chain": []})
        return 0
    except BaseException as exc:  # InvalidArgument from the loader, or anything an import raised
        send_message(conn, {"op": "load_failed", "message": _one_line(exc), "chain": exception_chain(exc)})
        return 0
    _flush()
    try:
        _start_device(device)
    except RuntimeError as exc:
        send_message(conn, {"op": "load_failed", "harness": True,
                            "message": f"the worker could not start {device}: {_one_line(exc)}"})
        return 0
    # Autotuned kernels: they run in Triton's interpreter too (no benchmarking), and the parent
    # pins one configuration per example (only this process can find the candidate's kernels).
    autotune.install()
    tuners = autotune.discover(impl)
    specialization.install(os.environ.get(specialization.ENV) or None)  # its compiles, counted (and listed in ENV)
    send_message(conn, {
        "op": "ready",
        "pid": os.getpid(),
        "load_seconds": time.perf_counter() - started,
        "interpreter": os.environ.get("TRITON_INTERPRET") == "1",
        "torch": str(torch.__version__),
        "tuning": {"combinations": autotune.combinations(tuners) if tuners else 0,
                   "description": autotune.describe(tuners)},
    })
    state = _WorkerState(impl, device, tuners, gradient=args["target"].endswith("@backward"))
    gc.freeze()  # torch, Triton, the candidate: out of the cycle collector's sight (see _poison)
    while True:
        try:
            header, frames = recv_message(conn)
        except (EOFError, OSError):
            return 0
        op = header.get("op")
        if op == "close":
            return 0
        if op == "call":
            # A new shared input's descriptor follows the message: read it now, whatever the call
            # does, or the channel is out of step.
            fd = receive_descriptor(conn) if header["input"].get("shared") else None
            state.call(conn, header["input"], frames[0], header.get("released") or (), fd)
        elif op == "release":
            state.release(conn)
        elif op == "bench_prepare":
            state.bench_prepare(conn, header)
        elif op == "bench_run":
            state.bench_run(conn, int(header["iters"]))
        else:
            raise ValueError(f"unknown op {op!r}")


class _LoadError(Exception):
    pass


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _load(target: str):
    # Imported here on purpose, not at the top: the target loader imports the project's kernels,
    # which must be decorated after TRITON_INTERPRET is set for this worker's device, never in the
    # fork server this module is loaded from.
    from ...target import load_target

    impl = load_target(target)
    name = target.rpartition(":")[2]
    try:
        from triton.runtime.jit import KernelInterface  # jit, interpreted, autotuned, heuristics

        if isinstance(impl, KernelInterface):
            raise _LoadError(
                f"{name} is a @triton.jit kernel, which cannot be called from Python: point the "
                "target at the launcher that allocates the output and launches the kernel."
            )
    except ImportError:
        pass
    try:
        signature = inspect.signature(impl)
    except (TypeError, ValueError):
        return impl  # builtins and C functions: their signature is unknown, the call will tell
    try:
        signature.bind(object())
    except TypeError:
        raise _LoadError(
            f"{name}{signature} cannot be called as {name}(x): the implementation must take "
            "the 2-D input tensor as its only required argument."
        ) from None
    return impl


def _start_device(device: str) -> None:
    """Create the CUDA context now, so the candidate's first call is not charged with it (seconds
    when dozens of workers start at once) and a GPU too full for one more context is the harness's
    problem, found before any call, not the candidate's crash. The context is tried again for a
    while: other jobs' contexts and inputs come and go."""
    if not device.startswith("cuda"):
        return
    deadline = time.monotonic() + MEMORY_WAIT
    while True:
        try:
            torch.empty(1, device=device)
            torch.cuda.synchronize(device)
            return
        except RuntimeError as exc:  # a GPU others filled: out of memory, or "busy or unavailable" for a context
            if not (out_of_memory(exc) or "busy or unavailable" in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


class _WorkerState:
    def __init__(self, impl, device: str, tuners=(), *, gradient: bool = False) -> None:
        self.impl = impl
        self.tuners = tuners
        self.device = torch.device(device)
        self.gradient = gradient  # it serves an implementation's gradient (--backward): dx, x's shape
        self.key = None
        self.flat = None  # the storage the input view lives in (uint8), kept across calls
        self.x = None
        self.sent = None  # what the parent sent, to see whether the call changed it
        self.shared = False  # the input is the parent's mapping (a CPU input)
        self.mode = None
        self.bench_input = None
        # Outputs the parent still holds, by id: kept alive as a caller keeps its results (their
        # memory is not the next output's), and their bytes go back after every call, so the
        # parent sees a returned buffer the candidate writes into again (see IsolatedImpl).
        self.held: dict[int, torch.Tensor] = {}
        self.record = OpRecord()  # the aten operators the candidate's calls ran
        self.returned = 0

    # -- input --------------------------------------------------------------------------------

    def _poison(self) -> None:
        """Fill the previous input with NaN bits before its memory returns to the allocator."""
        if self.x is None:
            return
        huge = self.mode != "storage"
        if huge:  # huge lazily allocated storage: touch only the view's elements
            bits(distinct(self.x)).fill_(-1)
        else:
            self.flat.fill_(0xFF)
        self.key = self.flat = self.x = self.sent = None
        # Managed memory on a GPU backs only a few pages of a huge storage: nothing to hurry.
        if huge and not (self.device.type == "cuda" and sparse_huge_inputs(self.device)):
            # An interpreted launch leaves cycles that hold its arguments (so the storage) until the
            # collector runs: collect now, or the next huge input lands beside this one, past the
            # address-space limit (quick: worker_main froze torch and Triton, 0.12 s in sight).
            gc.collect()
            if self.device.type == "cuda":
                # Gigabytes of device memory a GPU cannot leave to the caching allocator: the next
                # huge input (or another worker on the same GPU) needs them.
                torch.cuda.empty_cache()

    def release(self, conn: Connection) -> None:
        """Drop the input now (the parent is done with a huge one), and say so."""
        self._poison()
        send_message(conn, {"op": "released"})

    def input_for(self, spec: dict, frame: bytearray, fd: int | None = None):
        """The input tensor: same size, strides, storage offset, dtype and bits as the parent's.

        The same parent tensor (same key) maps to the same tensor object here, so a candidate
        that caches by object, pointer or shape sees a reused buffer exactly as it would in-process.
        """
        dtype = dtype_from_name(spec["dtype"])
        size, stride, offset = tuple(spec["size"]), tuple(spec["stride"]), int(spec["storage_offset"])
        key = json.dumps(spec["key"])
        data = torch.frombuffer(frame, dtype=torch.uint8) if len(frame) else torch.empty(0, dtype=torch.uint8)
        if key != self.key:
            self._poison()
            self.mode = spec["mode"]
            if fd is not None:
                # The parent's mapping of the storage (see fuzz.isolation.worker.shared_input): it reads
                # the same memory after the call, so it needs no word from here on what changed.
                try:
                    mapping = mmap.mmap(fd, 0)
                finally:
                    os.close(fd)
                fd = None
                # The storage is the first nbytes; the mapping's slack after it is there for reads
                # past the end (shared_input.slack), as an ordinary allocation would have.
                self.flat = torch.frombuffer(mapping, dtype=torch.uint8, count=int(spec["nbytes"]))
                self.x = torch.empty(0, dtype=dtype, device=self.device).set_(
                    self.flat.untyped_storage(), offset, size, stride)
            elif self.mode == "storage":
                self.flat = torch.empty(len(frame), dtype=torch.uint8, device=self.device)
                self.x = torch.empty(0, dtype=dtype, device=self.device).set_(
                    self.flat.untyped_storage(), offset, size, stride)
            else:
                # Huge storage, backed only where touched; only the view's elements are written.
                self.flat = huge_storage(int(spec["storage_elements"]), dtype, self.device)
                self.x = self.flat.as_strided(size, stride, offset)
            self.key = key
            self.shared = bool(spec.get("shared"))
        if fd is not None:  # a descriptor for an input we already hold: not needed
            os.close(fd)
        if self.shared:
            return self.x  # the parent has written the current bytes into the mapping
        if self.mode == "storage":
            self.flat.copy_(data)
        else:
            target = bits(distinct(self.x))
            target.copy_(data.view(target.dtype).reshape(target.shape))
        self.sent = data
        return self.x

    def changed_input(self):
        """The input's bytes after the call if the call changed them, else None (a shared input:
        the parent compares it itself)."""
        if self.shared:
            return None
        if self.mode == "storage":
            now = self.flat.cpu() if self.flat.device.type != "cpu" else self.flat
        else:
            now = bits(distinct(self.x)).cpu().reshape(-1).contiguous().view(torch.uint8)
        if torch.equal(now, self.sent):
            return None
        return memoryview(now.contiguous().numpy())

    # -- calls --------------------------------------------------------------------------------

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _let_go(self, released) -> None:
        """Drop the outputs the parent no longer holds; poison one that nothing else refers to
        before its memory returns to the allocator (a row the next kernel never writes cannot
        inherit a right answer). One the candidate still holds (a cache) is never touched."""
        for output_id in released:
            output = self.held.pop(int(output_id), None)
            if output is None:
                continue
            # References: ``output`` and getrefcount's argument; storage users: the tensor and the
            # temporary storage object.
            if sys.getrefcount(output) == 2 and _storage_users(output) == 2:
                try:
                    storage_bytes(output).fill_(0xFF)
                except Exception:
                    pass
            del output

    def call(self, conn: Connection, spec: dict, frame: bytearray, released=(), fd: int | None = None) -> None:
        self._let_go(released)
        try:
            x = with_memory_retry(lambda: self.input_for(spec, frame, fd), self.device)
        except BaseException as exc:  # e.g. the memory limit is too small for this input
            # A GPU full of other processes' memory: the harness's problem, not the candidate's.
            _reply_raised(conn, exc, during=REBUILDING_INPUT, kind="harness" if out_of_memory(exc) else None)
            return
        started = time.perf_counter()
        pinning = None
        removed = [False]
        try:
            with warnings.catch_warnings(), autotune.pinned(self.tuners, spec.get("config")) as pinning, \
                    recording(self.record, input_dtype=x.dtype, removed=removed), \
                    bounds.judging(spec.get("memory_bounds", True) is not False,
                                   initialized=spec.get("uninitialized_read", True) is not False):
                # The interpreter evaluates masked lanes with numpy and warns about inf - inf,
                # as the in-process runner ignores it: not the candidate's noise.
                warnings.simplefilter("ignore", RuntimeWarning)
                out = self.impl(x)
                bounds.judge_result(out)
            self._sync()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            _flush()
            send_message(conn, {"op": "exit", "code": code, "detail": f"the candidate called sys.exit({exc.code!r})"})
            _flush()
            os._exit(code)
        except BaseException as exc:
            _flush()
            _reply_raised(conn, exc, seconds=time.perf_counter() - started,
                          configs=pinning.lines() if pinning is not None else [])
            return
        seconds = time.perf_counter() - started
        _flush()
        try:
            output, frames = self._describe_output(out, x)
        except BaseException as exc:
            output, frames = {"kind": "object", "type": type(out).__name__,
                              "repr": f"<unreadable: {type(exc).__name__}: {_one_line(exc)}>"}, []
        fresh = output["kind"] == "tensor" and bool(frames)  # its values came: the parent holds a copy
        held = sorted(self.held)
        for output_id in held:
            frames.append(_copied_bytes(self.held[output_id]))
        if fresh:
            self.returned += 1
            output["id"] = self.returned
            self.held[self.returned] = out
        changed = self.changed_input()
        if changed is not None:
            frames.append(changed)
        ops = self.record.findings()
        if removed[0]:
            ops["runtime_record_removed"] = []
        send_message(conn, {"op": "returned", "output": output, "input_changed": changed is not None,
                            "held": held, "ops": ops, "seconds": seconds, "configs": pinning.lines(),
                            "variants": specialization.launched()},
                     tuple(frames))

    def _describe_output(self, out, x) -> tuple[dict, list]:
        if isinstance(out, torch.Tensor) and out.layout == torch.strided:
            common = {"dtype": dtype_name(out.dtype), "size": list(out.shape), "type": type(out).__name__}
            if out.device.type == "meta":
                return {"kind": "tensor", "device": "meta", **common}, []
            offset = _element_offset_within(out, x) if out.device == x.device else None
            if offset is not None:
                return {"kind": "alias", "stride": list(out.stride()), "storage_offset": offset, **common}, []
            described = {"kind": "tensor", "device": str(out.device), **common}
            if tuple(out.shape) != (tuple(x.shape) if self.gradient else (x.shape[0],)):
                # Only an (M,) result (or dx) is judged by its values; for another shape the parent
                # needs the shape to report the mismatch, not a possibly huge wrong answer.
                return dict(described, withheld=True), []
            return described, [_copied_bytes(out)]
        kind = type(out)
        name = kind.__name__ if not isinstance(out, torch.Tensor) else \
            f"{str(out.layout).replace('torch.', '')} tensor (not a dense one)"
        return {"kind": "object", "type": name, "module": getattr(kind, "__module__", ""),
                "repr": reprlib.repr(out)[:200]}, []

    # -- benchmark ----------------------------------------------------------------------------

    def bench_prepare(self, conn: Connection, header: dict) -> None:
        rows, cols = header["shape"]
        self.bench_input = seeded_input(rows, cols, dtype_from_name(header["dtype"]), header["seed"], self.device)
        try:
            for _ in range(int(header.get("warmup", 3))):
                self.impl(self.bench_input)
            self._sync()
        except BaseException as exc:
            _reply_raised(conn, exc, during="the benchmark warm-up")
            return
        send_message(conn, {"op": "ready"})

    def bench_run(self, conn: Connection, iters: int) -> None:
        out = None
        try:
            self._sync()
            for _ in range(iters):
                out = self.impl(self.bench_input)
            self._sync()
        except BaseException as exc:
            _reply_raised(conn, exc, during="the benchmark")
            return
        if isinstance(out, torch.Tensor) and out.layout == torch.strided and out.device.type != "meta":
            send_message(conn, {"op": "returned", "output": {"kind": "tensor", "dtype": dtype_name(out.dtype),
                                                             "size": list(out.shape), "device": str(out.device)}},
                         (_copied_bytes(out),))
        else:
            send_message(conn, {"op": "returned", "output": {"kind": "object", "type": type(out).__name__}})


def _element_offset_within(out: torch.Tensor, x: torch.Tensor) -> int | None:
    """Where ``out`` lies in ``x``'s storage, in ``out``'s elements, if all of it lies there.

    Decided from addresses, not storage identity: a view re-wrapped through numpy (or
    ``from_blob``, or a second mapping of the same memory through ``torch.frombuffer``) is a
    tensor of another storage object, starting past the input's first byte."""
    if not out.numel() or not x.untyped_storage().nbytes():
        return None
    if any(s < 0 for s in out.stride()):
        return None
    start = out.data_ptr()
    end = start + (sum((n - 1) * s for n, s in zip(out.shape, out.stride())) + 1) * out.element_size()
    base = x.untyped_storage().data_ptr()
    if start < base or end > base + x.untyped_storage().nbytes() or (start - base) % out.element_size():
        return None
    return (start - base) // out.element_size()


def _storage_users(t: torch.Tensor) -> int:
    """How many tensors and storage objects share ``t``'s memory (a large number when unknown)."""
    try:
        return int(torch._C._storage_Use_Count(t.untyped_storage()._cdata))
    except Exception:  # a private function: without it nothing is poisoned
        return 1 << 30


def _copied_bytes(t: torch.Tensor) -> memoryview:
    """The bytes of ``t`` from a copy: numpy views of the candidate's own tensor would make its storage
    non-resizable (a candidate that later resizes a buffer it returned would then crash)."""
    fresh = torch.empty(tuple(t.shape), dtype=t.dtype)  # standard strides, also for an empty or expanded result
    fresh.copy_(t.detach())
    return memoryview(fresh.view(torch.uint8).reshape(-1).numpy())


def _reply_raised(conn: Connection, exc: BaseException, *, during: str = "", seconds: float = 0.0,
                  configs: list[str] | None = None, kind: str | None = None) -> None:
    tb = exc.__traceback__
    frames = traceback.extract_tb(tb)
    # Drop this file's frames: the candidate's own are what a person needs.
    keep = [i for i, f in enumerate(frames) if f.filename != __file__]
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    if keep:
        lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames[keep[0]:])
        lines += traceback.format_exception_only(type(exc), exc)
        text = "".join(lines)
    send_message(conn, {
        "op": "raised",
        "kind": kind or error_kind(exc),
        "type": type(exc).__name__,
        "message": str(exc)[:4000],
        "traceback": text[-20000:],
        "chain": exception_chain(exc),
        "emulation": emulator_refusal(exc),
        "memory": memory_violation(exc),
        "during": during,
        "seconds": seconds,
        "configs": configs or [],
        "variants": specialization.launched(),
    })
