"""The child side of isolation: a fork server ("zygote"), the candidate worker, and the wire format.

This file is loaded by path in the zygote process, never through the ``fuzz`` package: the zygote
imports only the standard library and the heavy, trusted third-party modules (numpy, torch,
triton) so that every worker it forks starts in a fraction of a second instead of paying for
``import torch`` again. The zygote never touches CUDA (a forked child could not use it); each
worker initialises CUDA itself after the fork. The parent side is :mod:`fuzz.isolation`, which
imports this module normally for the wire format.

Wire format between the parent and a worker (a ``multiprocessing.connection.Connection`` over a
socket pair): each message is one JSON header frame, then the raw byte frames it announces in
``header["frames"]`` (their lengths). No pickle in either direction: the parent never unpickles
what a candidate's process sends.

Messages (parent -> worker):
  {"op": "call", "input": {...}}      + 1 frame: the input's storage bytes (or its view's bits)
  {"op": "bench_prepare", ...}        generate a seeded input on the GPU and warm the candidate up
  {"op": "bench_run", "iters": n}     n calls back to back between two device synchronisations
  {"op": "close"}
Replies (worker -> parent):
  {"op": "ready"} | {"op": "load_failed", "message": ...}               after loading the target
  {"op": "returned", "output": {...}, "input_changed": bool}  + output frame, + input frame if changed
  {"op": "raised", "kind": "exception" | "out_of_memory" | "cuda_error", "type", "message", "traceback"}
  {"op": "exit", "code": n, "detail": ...}                                 the candidate called sys.exit
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import reprlib
import resource
import selectors
import signal
import socket
import sys
import tempfile
import time
import traceback
import warnings
from multiprocessing.connection import Connection

PRELOAD = ("numpy", "torch", "triton", "triton.language")
"""Imported once by the zygote; every forked worker inherits them."""

MAX_HEADER_BYTES = 1 << 20
MAX_SPAWN_MESSAGE = 1 << 17  # a spawn request (config + environment) must fit one socket message
_PR_SET_PDEATHSIG = 1

# --------------------------------------------------------------------------------------------
# Wire format


def send_message(conn: Connection, header: dict, frames: tuple = ()) -> None:
    """One JSON header, then each frame (bytes-like) as its own message."""
    header = dict(header, frames=[memoryview(f).nbytes for f in frames])
    conn.send_bytes(json.dumps(header).encode())
    for frame in frames:
        conn.send_bytes(frame)


def recv_message(conn: Connection, *, max_frame: int | None = None) -> tuple[dict, list[bytearray]]:
    """The next message: its header and its frames (writable, so torch.frombuffer can wrap them)."""
    header = json.loads(conn.recv_bytes(MAX_HEADER_BYTES))
    if not isinstance(header, dict):
        raise ValueError(f"message header is a {type(header).__name__}, not an object")
    frames = []
    for size in header.get("frames", []):
        if not isinstance(size, int) or size < 0 or (max_frame is not None and size > max_frame):
            raise ValueError(f"frame of {size!r} bytes announced")
        buffer = bytearray(size)
        if size:
            received = conn.recv_bytes_into(buffer)
            if received != size:
                raise ValueError(f"frame of {received} bytes, {size} announced")
        else:
            conn.recv_bytes()
        frames.append(buffer)
    return header, frames


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def dtype_from_name(name: str):
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def tensor_bytes(t) -> memoryview:
    """The raw bytes of a tensor's elements in row-major order (copied to the CPU if needed)."""
    import torch

    flat = t.detach().reshape(-1)
    if flat.device.type != "cpu":
        flat = flat.cpu()
    return memoryview(flat.contiguous().view(torch.uint8).numpy())


def tensor_from_bytes(frame: bytearray, dtype, size, device="cpu"):
    import torch

    raw = torch.frombuffer(frame, dtype=torch.uint8) if len(frame) else torch.empty(0, dtype=torch.uint8)
    return raw.view(dtype).reshape(size).to(device)


def bits(t):
    """A tensor's raw bits as same-width integers (a view: strides are kept)."""
    import torch

    return t.detach().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def storage_bytes(t):
    """The whole storage under ``t`` as a flat uint8 tensor (a view of the same memory)."""
    import torch

    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


# --------------------------------------------------------------------------------------------
# Zygote: fork server


def zygote_main(lifeline_fd: int) -> None:
    """Serve spawn requests until the parent that started us goes away.

    Clients are the parent (over the lifeline socket it passed us) and any process that connects
    to the listening address we announce (grading drivers). A spawn request carries three file
    descriptors (channel, stdout, stderr) and a JSON config; we fork, reply with the pid, and
    later report the child's exit code to the client that spawned it. When a client goes away
    its children are killed; when the parent goes away, all of them are, and we exit.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    for name in PRELOAD:
        try:
            __import__(name)
        except Exception:  # a broken optional module must not stop the zygote; workers re-import
            pass
    address = os.path.join(tempfile.mkdtemp(prefix="lse-fuzz-zygote-"), "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(64)
    lifeline = socket.socket(fileno=lifeline_fd)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(lifeline, selectors.EVENT_READ)
    children: dict[socket.socket, set[int]] = {lifeline: set()}
    owner: dict[int, socket.socket] = {}
    _send_json(lifeline, {"op": "hello", "address": address, "pid": os.getpid()})

    def forget(client: socket.socket) -> None:
        for pid in children.pop(client, set()):
            _kill_group(pid)
            owner.pop(pid, None)
        selector.unregister(client)
        client.close()

    try:
        while True:
            for key, _ in selector.select(timeout=0.05):
                sock = key.fileobj
                if sock is listener:
                    client, _ = listener.accept()
                    children[client] = set()
                    selector.register(client, selectors.EVENT_READ)
                    continue
                try:
                    data, fds, _, _ = socket.recv_fds(sock, MAX_SPAWN_MESSAGE, 8)
                except OSError:
                    data, fds = b"", []
                if not data:
                    for fd in fds:
                        os.close(fd)
                    if sock is lifeline:
                        return
                    forget(sock)
                    continue
                reply = _spawn(json.loads(data), fds, selector, children, sock)
                if "pid" in reply:
                    children[sock].add(reply["pid"])
                    owner[reply["pid"]] = sock
                _send_json(sock, reply)
            _reap(children, owner)
    finally:
        for client in list(children):
            for pid in children[client]:
                _kill_group(pid)
        try:
            os.unlink(address)
            os.rmdir(os.path.dirname(address))
        except OSError:
            pass


def _send_json(sock: socket.socket, message: dict) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        pass  # that client is gone; forget() cleans up when its EOF is read


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(children: dict, owner: dict) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        client = owner.pop(pid, None)
        if client is not None:
            children.get(client, set()).discard(pid)
            _send_json(client, {"op": "exited", "pid": pid, "code": os.waitstatus_to_exitcode(status)})


def _spawn(config: dict, fds: list[int], selector, children: dict, client) -> dict:
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return {"op": "error", "message": f"spawn needs 3 file descriptors, got {len(fds)}"}
    zygote_pid = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            selector.close()
            for sock in children:
                sock.close()
            code = _child_main(config, fds, zygote_pid)
        except BaseException:
            try:
                traceback.print_exc()
            except BaseException:
                pass
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    for fd in fds:
        os.close(fd)
    return {"op": "spawned", "pid": pid}


def _set_parent_death_signal() -> None:
    """Die with the zygote (Linux): no worker outlives the process tree that started it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _child_main(config: dict, fds: list[int], zygote_pid: int) -> int:
    channel_fd, stdout_fd, stderr_fd = fds
    os.setsid()  # own process group: the terminal's Ctrl-C does not reach it; killpg reaches its children
    _set_parent_death_signal()
    if os.getppid() != zygote_pid:
        return 1
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    for fd in (devnull, stdout_fd, stderr_fd):
        os.close(fd)
    os.chdir(config["cwd"])
    os.environ.clear()
    os.environ.update(config["env"])
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]
    for entry in reversed(config.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, value in config.get("rlimits", {}).items():
        limit = getattr(resource, name)
        _, hard = resource.getrlimit(limit)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(limit, (value, hard))
    faulthandler.enable()
    entry = config.get("entry", "worker")
    if entry == "worker":
        return worker_main(channel_fd, config["args"])
    module_name, _, function = entry.partition(":")
    module = __import__(module_name, fromlist=[function])
    return int(getattr(module, function)(channel_fd, config["args"]) or 0)


# --------------------------------------------------------------------------------------------
# The candidate worker


def worker_main(channel_fd: int, args: dict) -> int:
    """Load the target, then serve calls until the parent closes the channel."""
    conn = Connection(channel_fd)
    device = args["device"]
    if device == "cpu":
        # CPU tensors need Triton's interpreter, whatever GPU this machine has; set before the
        # candidate's @triton.jit decorators run.
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    if args.get("threads"):
        torch.set_num_threads(int(args["threads"]))
    started = time.perf_counter()
    try:
        impl = _load(args["target"])
    except SystemExit as exc:
        send_message(conn, {"op": "load_failed", "message": f"importing it called sys.exit({exc.code!r})"})
        return 0
    except _LoadError as exc:
        send_message(conn, {"op": "load_failed", "message": str(exc)})
        return 0
    except BaseException as exc:  # InvalidArgument from the loader, or anything an import raised
        send_message(conn, {"op": "load_failed", "message": _one_line(exc)})
        return 0
    _flush()
    send_message(conn, {
        "op": "ready",
        "pid": os.getpid(),
        "load_seconds": time.perf_counter() - started,
        "interpreter": os.environ.get("TRITON_INTERPRET") == "1",
        "torch": str(torch.__version__),
    })
    state = _WorkerState(impl, device)
    while True:
        try:
            header, frames = recv_message(conn)
        except (EOFError, OSError):
            return 0
        op = header.get("op")
        if op == "close":
            return 0
        if op == "call":
            state.call(conn, header["input"], frames[0])
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
    import inspect

    from fuzz._target import load_target

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


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _error_kind(exc: BaseException) -> str:
    """How the parent should treat what the candidate raised."""
    import torch

    text = str(exc)
    if isinstance(exc, MemoryError) or isinstance(exc, getattr(torch, "OutOfMemoryError", ())) \
            or "can't allocate memory" in text or "out of memory" in text:
        return "out_of_memory"
    if "CUDA error" in text or "illegal memory access" in text or "device-side assert" in text \
            or type(exc).__name__ == "AcceleratorError":
        return "cuda_error"  # the CUDA context is unusable after these
    return "exception"


class _WorkerState:
    def __init__(self, impl, device: str) -> None:
        import torch

        self.impl = impl
        self.device = torch.device(device)
        self.key = None
        self.flat = None  # the storage the input view lives in (uint8), kept across calls
        self.x = None
        self.sent = None  # what the parent sent, to see whether the call changed it
        self.mode = None
        self.bench_input = None

    # -- input --------------------------------------------------------------------------------

    def _poison(self) -> None:
        """Fill the previous input with NaN bits before its memory returns to the allocator."""
        if self.x is None:
            return
        if self.mode == "storage":
            self.flat.fill_(0xFF)
        else:  # huge lazily allocated storage: touch only the view's elements
            bits(self.x).fill_(-1)
        self.key = self.flat = self.x = self.sent = None

    def input_for(self, spec: dict, frame: bytearray):
        """The input tensor: same size, strides, storage offset, dtype and bits as the parent's.

        The same parent tensor (same key) maps to the same tensor object here, so a candidate
        that caches by object, pointer or shape sees a reused buffer exactly as it would in-process.
        """
        import torch

        dtype = dtype_from_name(spec["dtype"])
        size, stride, offset = tuple(spec["size"]), tuple(spec["stride"]), int(spec["storage_offset"])
        key = json.dumps(spec["key"])
        data = torch.frombuffer(frame, dtype=torch.uint8) if len(frame) else torch.empty(0, dtype=torch.uint8)
        if key != self.key:
            self._poison()
            self.mode = spec["mode"]
            if self.mode == "storage":
                self.flat = torch.empty(len(frame), dtype=torch.uint8, device=self.device)
                self.x = torch.empty(0, dtype=dtype, device=self.device).set_(
                    self.flat.untyped_storage(), offset, size, stride)
            else:
                # Huge storage: torch.empty touches no memory; only the view's elements are written.
                self.flat = torch.empty(int(spec["storage_elements"]), dtype=dtype, device=self.device)
                self.x = self.flat.as_strided(size, stride, offset)
            self.key = key
        if self.mode == "storage":
            self.flat.copy_(data)
        else:
            bits(self.x).copy_(data.view(bits(self.x).dtype).reshape(size))
        self.sent = data
        return self.x

    def changed_input(self):
        """The input's bytes after the call if the call changed them, else None."""
        import torch

        if self.mode == "storage":
            now = self.flat.cpu() if self.flat.device.type != "cpu" else self.flat
        else:
            now = bits(self.x).cpu().contiguous().view(torch.uint8).reshape(-1)
        if torch.equal(now, self.sent):
            return None
        return memoryview(now.contiguous().numpy())

    # -- calls --------------------------------------------------------------------------------

    def _sync(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def call(self, conn: Connection, spec: dict, frame: bytearray) -> None:
        try:
            x = self.input_for(spec, frame)
        except BaseException as exc:  # e.g. the memory limit is too small for this input
            self._reply_raised(conn, exc, during="rebuilding the input in the worker")
            return
        started = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # The interpreter evaluates masked lanes with numpy and warns about inf - inf,
                # as the in-process runner ignores it: not the candidate's noise.
                warnings.simplefilter("ignore", RuntimeWarning)
                out = self.impl(x)
            self._sync()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            _flush()
            send_message(conn, {"op": "exit", "code": code, "detail": f"the candidate called sys.exit({exc.code!r})"})
            _flush()
            os._exit(code)
        except BaseException as exc:
            _flush()
            self._reply_raised(conn, exc, seconds=time.perf_counter() - started)
            return
        seconds = time.perf_counter() - started
        _flush()
        try:
            output, frames = self._describe_output(out, x)
        except BaseException as exc:
            output, frames = {"kind": "object", "type": type(out).__name__,
                              "repr": f"<unreadable: {type(exc).__name__}: {_one_line(exc)}>"}, []
        changed = self.changed_input()
        if changed is not None:
            frames.append(changed)
        send_message(conn, {"op": "returned", "output": output, "input_changed": changed is not None,
                            "seconds": seconds}, tuple(frames))
        if output["kind"] == "tensor" and output.get("device") != "meta":
            # The caller owns the result: poison it, so a result kept and returned again (a cache
            # without a copy) or memory reused uninitialised by the next call reads NaN, not a
            # stale right answer.
            try:
                storage_bytes(out).fill_(0xFF)
            except Exception:
                pass

    def _reply_raised(self, conn: Connection, exc: BaseException, *, during: str = "", seconds: float = 0.0) -> None:
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
            "kind": _error_kind(exc),
            "type": type(exc).__name__,
            "message": str(exc)[:4000],
            "traceback": text[-20000:],
            "during": during,
            "seconds": seconds,
        })

    def _describe_output(self, out, x) -> tuple[dict, list]:
        import torch

        if isinstance(out, torch.Tensor) and out.layout == torch.strided:
            common = {"dtype": dtype_name(out.dtype), "size": list(out.shape), "type": type(out).__name__}
            if out.device.type == "meta":
                return {"kind": "tensor", "device": "meta", **common}, []
            if out.device == x.device and out.untyped_storage().nbytes() \
                    and out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
                return {"kind": "alias", "stride": list(out.stride()),
                        "storage_offset": out.storage_offset(), **common}, []
            return {"kind": "tensor", "device": str(out.device), **common}, [tensor_bytes(out)]
        kind = type(out)
        name = kind.__name__ if not isinstance(out, torch.Tensor) else f"Tensor(layout={out.layout})"
        return {"kind": "object", "type": name, "module": getattr(kind, "__module__", ""),
                "repr": reprlib.repr(out)[:200]}, []

    # -- benchmark ----------------------------------------------------------------------------

    def bench_prepare(self, conn: Connection, header: dict) -> None:
        import torch

        rows, cols = header["shape"]
        generator = torch.Generator(device=self.device).manual_seed(int(header["seed"]))
        x = torch.randn(rows, cols, generator=generator, device=self.device, dtype=torch.float32)
        self.bench_input = x.to(dtype_from_name(header["dtype"]))
        try:
            for _ in range(int(header.get("warmup", 3))):
                self.impl(self.bench_input)
            self._sync()
        except BaseException as exc:
            self._reply_raised(conn, exc, during="the benchmark warm-up")
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
            self._reply_raised(conn, exc, during="the benchmark")
            return
        import torch

        if isinstance(out, torch.Tensor) and out.layout == torch.strided and out.device.type != "meta":
            send_message(conn, {"op": "returned", "output": {"kind": "tensor", "dtype": dtype_name(out.dtype),
                                                             "size": list(out.shape), "device": str(out.device)}},
                         (tensor_bytes(out),))
        else:
            send_message(conn, {"op": "returned", "output": {"kind": "object", "type": type(out).__name__}})
