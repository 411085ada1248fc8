"""Compiling is not hanging: the worker tells its parent when a compiler runs for the candidate.

A GPU compiles a Triton kernel once per specialisation, on its first launch, and the first call of
a whole-row kernel over a 2**19-lane block can spend minutes in the compiler. Timed as a call,
that looks like a hang. So the worker reports every compile as it happens, on the channel the
reply will come on (:mod:`fuzz.isolation.wire`):

  {"op": "compiling", "kind": "triton" | "autotune" | "torch.compile", "kernel": name, "block": n}
  {"op": "compiled",  "kind": ..., "kernel": ..., "block": n, "seconds": s}

and the parent (:class:`fuzz.isolation.worker.proxy.IsolatedImpl`) stops a call's clock between the two:
a call is a hang only while nothing is compiling. What is watched:

* Triton's JIT: ``triton.compiler.compile``, which ``JITFunction`` binds when it first launches
  (also ``triton.compile``, which torch's inductor calls);
* autotuning's benchmarks: ``Autotuner._bench``, one config timed on the GPU (it compiles first);
* ``torch.compile``: dynamo's compile start and end callbacks.

Only the main thread reports: the reply to a call is sent from it after the call returns, so a
notice can never cut into another message. Compiles nest (an autotuning benchmark compiles, an
inductor compile calls Triton): one notice pair covers the outermost. ``block`` is the widest
power-of-two constexpr of a Triton kernel (its BLOCK), 0 when unknown.

A candidate could forge notices (it runs in this process); the parent bounds the time a call may
spend compiling (``--compile-timeout``), so a forged notice buys at most that.

Light on purpose: the standard library and Triton (the fork server has them loaded), imported in
the worker before the candidate; torch's dynamo is watched once it is imported (the interpreter's
fork server leaves it out).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

import triton
import triton.compiler
import triton.compiler.compiler
from triton.runtime.autotuner import Autotuner

from .post_import import when_imported

__all__ = ["install"]

_state: dict = {"send": None, "depth": 0, "started": 0.0, "what": {}}


def _widest_block(src) -> int:
    """The largest power-of-two integer constexpr of an ASTSource (its BLOCK), else 0."""
    constants = getattr(src, "constants", None) or {}
    values = constants.values() if isinstance(constants, dict) else ()
    blocks = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 1 and v & (v - 1) == 0]
    return max(blocks, default=0)


def _kernel_name(src) -> str:
    fn = getattr(src, "fn", None)
    return str(getattr(fn, "__name__", None) or getattr(src, "name", None) or "?")


def _begin(kind: str, kernel: str, block: int) -> bool:
    if _state["send"] is None or threading.current_thread() is not threading.main_thread():
        return False
    _state["depth"] += 1
    if _state["depth"] == 1:
        _state["started"] = time.monotonic()
        _state["what"] = {"kind": kind, "kernel": kernel, "block": block}
        _state["send"]({"op": "compiling", **_state["what"]})
    return True


def _end() -> None:
    _state["depth"] -= 1
    if _state["depth"] == 0:
        _state["send"]({"op": "compiled", **_state["what"], "seconds": time.monotonic() - _state["started"]})


def _watched(kind: str, function: Callable, describe: Callable[..., tuple[str, int]]) -> Callable:
    if getattr(function, "_lse_fuzz_watched", False):
        return function

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            kernel, block = describe(*args, **kwargs)
        except Exception:  # another Triton's layout: still a compile, unnamed
            kernel, block = "?", 0
        began = _begin(kind, kernel, block)
        try:
            return function(*args, **kwargs)
        finally:
            if began:
                _end()

    wrapper._lse_fuzz_watched = True
    return wrapper


def _describe_compile(src, *args, **kwargs) -> tuple[str, int]:
    return _kernel_name(src), _widest_block(src)


def _describe_bench(tuner, *args, config=None, **kwargs) -> tuple[str, int]:
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    values = [v for v in (getattr(config, "kwargs", None) or {}).values()]
    blocks = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 1 and v & (v - 1) == 0]
    return str(getattr(fn, "__name__", "?")), max(blocks, default=0)


def _watch_triton() -> None:
    original = triton.compiler.compiler.compile
    watched = _watched("triton", original, _describe_compile)
    for module in (triton, triton.compiler, triton.compiler.compiler):
        if getattr(module, "compile", None) is original or getattr(module, "compile", None) is watched:
            module.compile = watched
    bench = Autotuner.__dict__.get("_bench")
    if bench is not None:
        Autotuner._bench = _watched("autotune", bench, _describe_bench)


def _watch_torch_compile(_dynamo) -> None:
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:  # an older torch: its compiles are timed as calls
        return
    pending: list[bool] = []

    def start(*args, **kwargs) -> None:
        pending.append(_begin("torch.compile", "torch.compile", 0))

    def end(*args, **kwargs) -> None:
        if pending and pending.pop():
            _end()

    callback_handler.register_start_callback(start)
    callback_handler.register_end_callback(end)


def install(send: Callable[[dict], None]) -> None:
    """Report compiles through ``send(header)`` from now on; idempotent (the last ``send`` wins)."""
    first = _state["send"] is None
    _state["send"] = send
    if first:
        _watch_triton()
        # Once torch._dynamo is imported (at once where the fork server preloaded it: see .post_import).
        when_imported("torch._dynamo", _watch_torch_compile)
