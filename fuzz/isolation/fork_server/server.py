"""The fork server ("zygote"): the process every worker and grading driver is forked from.

The parent (:class:`fuzz.isolation.fork_server.client.Zygote`) starts it with ``python -c`` and this module's
:func:`zygote_main`. It imports only the standard library and the heavy, trusted third-party
modules (numpy, torch, triton), so that every child it forks starts in a fraction of a second
instead of paying for ``import torch`` again. It never touches CUDA (a forked child could not
use it) and never imports the project's kernels (a kernel decides between Triton's interpreter and
the GPU when it is decorated, and only a child knows which device it serves).

A spawn request carries three file descriptors (channel, stdout, stderr) and a JSON config
(entry ``module:function``, working directory, environment, import path, rlimits, arguments);
the child runs in its own session with that environment and calls the entry with the channel.
Linux only (fork, SCM_RIGHTS descriptor passing, PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import json
import os
import resource
import selectors
import signal
import socket
import sys
import tempfile
import time
import traceback

from ..processes import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, child_pids, kill_group, prctl, stat_fields

PRELOAD = ("numpy", "torch", "triton", "triton.language")
"""Imported once by the zygote; every forked child inherits them."""
GPU_PRELOAD = ("torch._dynamo",)
"""Imported too by a zygote of compiled kernels (not Triton's interpreter). In the interpreter's
zygote ``torch._dynamo`` is left out: 1.7 s of its start on a 2-core CPU, and a worker imports it
only for a candidate that does (:mod:`fuzz.isolation.worker.post_import`); a cold CPU ``lse-fuzz
mutants`` went from 35.5 s to 33.1 s (medians of two); the test tiers' times in CI moved within
their noise. On an H100 host the same change made a cold ``lse-fuzz mutants --device cuda``
slower, 34.1 s -> 38.5 s (medians of four and five runs, alternating on two machines), its gate's
shares split the stream differently there, for a cause not found yet (bench/RESULTS.md,
2026-12-07, seventh): preloaded on a GPU host, as before."""

MAX_SPAWN_MESSAGE = 1 << 17  # a spawn request (config + environment) must fit one socket message
ORPHAN_LINGER = 5.0
"""Seconds an orphan we killed stays a zombie before we reap it: its entry in /proc names us as its
parent, so a signal it sent the grader just before it died is still known for the run's, not a
stranger's (fuzz.isolation.guard.signals reads the sender's parents when it takes the signal).
Only seconds our parent (the grader) ran count: one a candidate stopped takes the signals sent
meanwhile once it runs again, up to seconds later (its watchdog, or its supervisor, continues
it); reaped by then, an orphan's SIGINT was taken for a stranger's and ended the batch."""
MAX_LINGERING = 1000
"""Zombies kept at most: past it the oldest are reaped whatever their time, so a grader stopped for
long (Ctrl-Z) beside a candidate that leaves an orphan on every call cannot use up the pids."""


def _hash_triton() -> None:
    """Compute Triton's own key (a hash of its compiler's sources, part of every cache key) here,
    once, when kernels will be compiled: each forked worker inherits it instead of hashing those
    files again before its first kernel (a few tenths of a second each, measured on an H200 host)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    try:
        from triton.runtime.cache import triton_key
        triton_key()
    except Exception:  # another Triton's layout: each worker computes it, as it would anyway
        pass


def _preload() -> None:
    """Import :data:`PRELOAD` and hash Triton, then freeze it all: every child inherits these modules
    for its whole life, and frozen, its cycle collector never scans them (nor writes to their pages,
    which stay shared with us)."""
    compiled = os.environ.get("TRITON_INTERPRET") != "1"
    for name in PRELOAD + (GPU_PRELOAD if compiled else ()):
        try:
            __import__(name)
        except Exception:  # a broken optional module must not stop the zygote; workers re-import
            pass
    _hash_triton()
    gc.freeze()


def _address_space() -> int:
    """Bytes of address space this process maps now (VmSize), 0 when it cannot be read."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def zygote_main(lifeline_fd: int) -> None:
    """Serve spawn requests until the parent that started us goes away.

    Clients are the parent (over the lifeline socket it passed us) and any process that connects
    to the listening address we announce (grading drivers). A spawn request carries three file
    descriptors (channel, stdout, stderr) and a JSON config; we fork, reply with the pid, and
    later report the child's exit code to the client that spawned it. When a client goes away
    its children are killed; when the parent goes away, all of them are, and we exit.
    """
    # The grader blocks the signals it takes with sigwaitinfo (fuzz.isolation.guard.signals), and a
    # blocked mask survives fork and exec: unblocked here, so every driver and worker forked from
    # us dies of SIGTERM (or SIGINT, SIGHUP...) again, as any process would.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    # Orphans of every process we fork become our children (not init's): a candidate's detached
    # process (double fork, setsid) cannot outlive its worker and write after the grader.
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    _preload()
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
    orphans: dict[int, float] = {}  # adopted and killed -> seconds our parent has run since
    parent, last = os.getppid(), time.monotonic()
    _send_json(lifeline, {"op": "hello", "address": address, "pid": os.getpid()})

    def forget(client: socket.socket) -> None:
        for pid in children.pop(client, set()):
            kill_group(pid)
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
            now = time.monotonic()
            ran, last = (0.0 if _stopped(parent) else now - last), now
            _reap(children, owner, orphans, ran)
            _kill_orphans(owner, orphans)
    finally:
        for client in list(children):
            for pid in children[client]:
                kill_group(pid)
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


def _stopped(pid: int) -> bool:
    fields = stat_fields(pid)
    return bool(fields) and fields[0] in ("T", "t")


def _kill_orphans(owner: dict, orphans: dict) -> None:
    """Kill every child we did not fork ourselves: processes a worker or driver started that lost
    their parent (a double fork, or a worker that died) and were handed to us as subreaper."""
    for pid in child_pids():
        if pid not in owner:
            kill_group(pid)
            orphans.setdefault(pid, 0.0)


def _reap(children: dict, owner: dict, orphans: dict, ran: float) -> None:
    """Reap the children we forked that exited (and tell their clients), and the orphans we killed
    once our parent has run :data:`ORPHAN_LINGER` seconds since (``ran``: since the last call)."""
    for pid in list(owner):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, None
        if done == 0:
            continue
        client = owner.pop(pid)
        children.get(client, set()).discard(pid)
        if status is not None:
            _send_json(client, {"op": "exited", "pid": pid, "code": os.waitstatus_to_exitcode(status)})
    excess = len(orphans) - MAX_LINGERING
    for pid in list(orphans):  # the oldest first
        orphans[pid] += ran
        if orphans[pid] < ORPHAN_LINGER and excess <= 0:
            continue
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            del orphans[pid]
            excess -= 1


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
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


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
    signal.pthread_sigmask(signal.SIG_SETMASK, set())  # a clean mask whoever started the fork server
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, value in config.get("rlimits", {}).items():
        limit = getattr(resource, name)
        if name == "RLIMIT_AS":
            # Counted above what this process maps already (torch, Triton and their libraries, never
            # the candidate's): 0.8 GiB of address space with a CPU build of torch, gigabytes with a
            # CUDA build, so a `--device cpu` worker on a GPU host once ran out of room for its inputs.
            value += _address_space()
        _, hard = resource.getrlimit(limit)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # Soft and hard alike: a soft limit alone is one the candidate may raise again.
        resource.setrlimit(limit, (value, value))
    faulthandler.enable()
    # The entry is imported here, after the fork and after the environment is the child's own:
    # a candidate worker decides between Triton's interpreter and the GPU only now.
    module_name, _, function = config["entry"].partition(":")
    module = importlib.import_module(module_name)
    return int(getattr(module, function)(channel_fd, config["args"]) or 0)
