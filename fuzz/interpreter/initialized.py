"""Reads of memory that nothing wrote: the allocations a call makes with ``torch.empty`` tracked byte by byte.

A kernel that reads a scratch buffer from ``torch.empty`` before any program wrote it (a partial
it skipped storing, an accumulator it assumed zero) gets whatever the allocator left there. On a
fresh page that is zeros, and zeros are often the right answer: the values pass until the
allocator hands back memory that held something else. On a GPU compute-sanitizer's initcheck sees
such a read; in Triton's interpreter nothing did.

While a call runs under :func:`tracking`, a ``TorchFunctionMode`` records every allocation of the
``empty`` family (``torch.empty``, ``empty_like``, ``empty_strided``, ``Tensor.new_empty``, ...) on
the CPU, with a bitmap of its bytes, all unwritten. A byte becomes written when

* a kernel stores to it (the interpreter's builder, patched by :mod:`fuzz.interpreter.bounds`, calls
  :func:`stored` with the lanes its mask lets through), or an atomic updates it;
* a PyTorch op writes it: an in-place op (``fill_``, ``copy_``, ``x += y``), an assignment
  (``x[i] = v``), an ``out=`` argument, a custom op of ``torch.ops`` (which may mutate any argument);
* it escapes where writes cannot be seen (``.numpy()``, ``__array__``, ``__dlpack__``): the whole
  allocation counts as written, so a write outside PyTorch is never mistaken for none.

A kernel's load of an unwritten byte, or an atomic that reads one, raises :class:`UninitializedRead`
before it happens (:func:`unwritten`); so does a result that hands unwritten bytes back to the caller
(:func:`check_result`). Loads that a mask turns off are never judged, and memory the call did not
allocate (its input, ``torch.zeros``, what it allocated before the call) is never tracked. The
bookkeeping errs toward "written": a write it cannot see must not turn into a false alarm.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field

import numpy as np

__all__ = ["check_result", "judged", "stored", "tracking", "unwritten"]

_ALLOCATORS = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
                         "new_empty_strided"})
# In-place by name, yet not a write of the tensor's elements (they rebind, resize or flag it).
_NOT_WRITES = frozenset({"set_", "requires_grad_", "share_memory_", "retain_grad", "resize_", "resize_as_",
                         "as_strided_", "detach_", "squeeze_", "unsqueeze_", "transpose_", "t_", "swapdims_",
                         "swapaxes_"})
_ESCAPES = frozenset({"numpy", "__array__", "__dlpack__"})
_MAX_TRACKED_BYTES = 1 << 28  # a bitmap of a larger allocation costs more than the check is worth
_MAX_EXACT_ELEMENTS = 1 << 22  # a strided write of more elements marks the span it covers


@dataclass
class _Allocation:
    start: int
    nbytes: int
    site: str  # "torch.empty at impl.py:12"
    storage: object = field(repr=False)  # held: its address cannot go to another tensor during the call
    written: np.ndarray = field(repr=False, default=None)

    def __post_init__(self) -> None:
        if self.written is None:
            self.written = np.zeros(self.nbytes, dtype=bool)


_TRACKED: list[_Allocation] = []
_ACTIVE = [False]  # a call is being tracked (and its kernels' reads judged)
_PAUSED = [0]  # inside an interpreter launch: its own tensor bookkeeping is not the candidate's


def judged() -> bool:
    """True while a tracked call runs and has allocations to judge reads of."""
    return _ACTIVE[0] and bool(_TRACKED)


@contextlib.contextmanager
def paused():
    """The interpreter's own handling of a launch's arguments (host copies, ``set_``) is not a write."""
    _PAUSED[0] += 1
    try:
        yield
    finally:
        _PAUSED[0] -= 1


def outer_frame(skip: tuple[str, ...], depth: int = 1):
    """The innermost frame, from the caller's ``depth``-th caller outwards (1: the caller's own),
    whose file lies under none of the ``skip`` paths (folders ending in a separator, or files);
    None if there is none. Both memory checks name the candidate's line so."""
    frame = sys._getframe(depth + 1)
    while frame is not None:
        if not os.path.realpath(frame.f_code.co_filename).startswith(skip):
            return frame
        frame = frame.f_back
    return None


def _caller_site() -> str:
    """The innermost line of the candidate's code (outside torch, triton, contextlib and the fuzzer)."""
    skip = [os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep, os.path.realpath(contextlib.__file__)]
    for name in ("torch", "triton"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            skip.append(os.path.dirname(os.path.realpath(module.__file__)) + os.sep)
    frame = outer_frame(tuple(skip), depth=2)
    return "an unknown line" if frame is None else \
        f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _register(name: str, result) -> None:
    import torch  # noqa: PLC0415

    if not isinstance(result, torch.Tensor) or result.device.type != "cpu":
        return
    storage = result.untyped_storage()
    nbytes = storage.nbytes()
    if nbytes == 0 or nbytes > _MAX_TRACKED_BYTES:
        return
    start = storage.data_ptr()
    _TRACKED[:] = [a for a in _TRACKED if a.start + a.nbytes <= start or start + nbytes <= a.start]
    prefix = "torch" if not name.startswith("new_") else "Tensor"
    _TRACKED.append(_Allocation(start, nbytes, f"{prefix}.{name} at {_caller_site()}", storage))


def _owner(address: int) -> _Allocation | None:
    for allocation in _TRACKED:
        if allocation.start <= address < allocation.start + allocation.nbytes:
            return allocation
    return None


def _allocation_of(t) -> _Allocation | None:
    """The tracked allocation ``t`` (a CPU tensor, or anything else) is a view of, or None."""
    import torch  # noqa: PLC0415

    if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or not _TRACKED:
        return None
    try:
        storage = t.untyped_storage()
    except (RuntimeError, NotImplementedError):
        return None
    return _owner(storage.data_ptr()) if storage.nbytes() else None


def _first_bytes(t, allocation: _Allocation) -> np.ndarray:
    """The offset in ``allocation`` of the first byte of each of ``t``'s elements, in element order."""
    offsets = np.zeros(1, dtype=np.int64)
    for n, stride in zip(t.shape, t.stride()):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * stride).reshape(-1)
    return t.data_ptr() - allocation.start + offsets * t.element_size()


def _mark_tensor(t, *, whole: bool = False) -> None:
    """The bytes of ``t``'s elements (its whole allocation: ``whole``) are written."""
    allocation = _allocation_of(t)
    if allocation is None:
        return
    if whole or t.numel() > _MAX_EXACT_ELEMENTS:
        allocation.written[:] = True
        return
    if t.numel() == 0:
        return
    size, base = t.element_size(), t.data_ptr() - allocation.start
    if t.is_contiguous():
        allocation.written[max(base, 0):base + t.numel() * size] = True
        return
    first = _first_bytes(t, allocation)
    for byte in range(size):
        index = first + byte
        index = index[(index >= 0) & (index < allocation.nbytes)]
        allocation.written[index] = True


def _mark_assigned(t, index) -> None:
    """``t[index] = v``: the elements of the view ``t[index]`` when it is one (basic indexing); all of
    ``t`` otherwise (advanced indexing writes a scattered set: the whole counts as written)."""
    try:
        part = t[index]
        exact = part._is_view() and part.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    except Exception:
        exact = False
    if exact:
        _mark_tensor(part)
    else:
        _mark_tensor(t, whole=True)


def _tensors(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    else:
        yield value


def _observe(func, args, kwargs, result) -> None:
    name = getattr(func, "__name__", "") or ""
    if name in _ALLOCATORS:
        _register(name, result)
        return
    if not _TRACKED:
        return
    if type(func).__module__.startswith("torch._ops"):  # a custom op: may write any argument
        for value in (*args, *kwargs.values()):
            for t in _tensors(value):
                _mark_tensor(t, whole=True)
        return
    if "out" in kwargs:
        for t in _tensors(kwargs["out"]):
            _mark_tensor(t)
    if not args:
        return
    if name == "__setitem__":
        _mark_assigned(args[0], args[1] if len(args) > 1 else None)
    elif name in _ESCAPES:
        _mark_tensor(args[0], whole=True)
    elif (name.endswith("_") and not name.startswith("_") and name not in _NOT_WRITES) or \
            (name.startswith("__i") and name.endswith("__")):
        _mark_tensor(args[0])


def _mode_class():
    from torch.overrides import TorchFunctionMode  # noqa: PLC0415

    class _Tracker(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            if not _PAUSED[0]:
                try:
                    _observe(func, args, kwargs, result)
                except Exception:  # bookkeeping must never change what the candidate sees
                    pass
            return result

    return _Tracker


@contextlib.contextmanager
def tracking(enabled: bool = True):
    """Track the ``empty`` allocations of the call within and judge reads of their bytes (``enabled``);
    nothing is tracked once it ends (the candidate's next call starts afresh)."""
    if not enabled or _ACTIVE[0]:
        yield
        return
    _TRACKED.clear()
    _ACTIVE[0] = True
    try:
        with _mode_class()():
            yield
    finally:
        _ACTIVE[0] = False
        _TRACKED.clear()


def _touched(addresses: np.ndarray):
    """(allocation, which of ``addresses`` lie in it, their byte offsets in it) for each tracked
    allocation they touch."""
    for allocation in _TRACKED:
        inside = (addresses >= np.uint64(allocation.start)) & \
            (addresses < np.uint64(allocation.start + allocation.nbytes))
        if inside.any():
            yield allocation, inside, (addresses[inside] - np.uint64(allocation.start)).astype(np.int64)


def stored(addresses: np.ndarray, size: int) -> None:
    """A kernel wrote ``size`` bytes at each of ``addresses`` (uint64, the lanes its mask let through)."""
    for allocation, _, first in _touched(addresses):
        for byte in range(size):
            index = first + byte
            allocation.written[index[index < allocation.nbytes]] = True


def unwritten(addresses: np.ndarray, size: int) -> tuple[int, int, str] | None:
    """(the first address of ``addresses`` whose ``size`` bytes were not all written, how many lanes
    read such memory, the allocation's site), or None when every lane reads written memory."""
    first_bad, count, site = None, 0, ""
    for allocation, inside, first in _touched(addresses):
        lanes = addresses[inside]
        ok = np.ones(first.shape, dtype=bool)
        for byte in range(size):
            index = np.minimum(first + byte, allocation.nbytes - 1)
            ok &= allocation.written[index]
        if not ok.all():
            bad = lanes[~ok]
            count += int(bad.size)
            if first_bad is None:
                first_bad, site = int(bad[0]), allocation.site
    return None if first_bad is None else (first_bad, count, site)


def check_result(out) -> tuple[str, int, int, str] | None:
    """(which result, the first unwritten element's index, how many, the allocation's site) when the
    call hands back elements of a tracked allocation that nothing wrote; None otherwise."""
    if not judged():
        return None
    for position, t in enumerate(_tensors(out)):
        allocation = _allocation_of(t)
        if allocation is None or t.numel() == 0 or t.numel() > _MAX_EXACT_ELEMENTS:
            continue
        size, first = t.element_size(), _first_bytes(t, allocation)
        ok = np.ones(first.shape, dtype=bool)
        for byte in range(size):
            index = np.clip(first + byte, 0, allocation.nbytes - 1)
            ok &= allocation.written[index]
        if not ok.all():
            which = "the result" if not isinstance(out, (tuple, list)) else f"result {position}"
            return which, int(np.flatnonzero(~ok)[0]), int((~ok).sum()), allocation.site
    return None
