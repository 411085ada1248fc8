"""Every memory access of an interpreted kernel checked against the launch's tensors, before it happens.

On a GPU a kernel that reads past its row and discards the lanes with ``tl.where``, or launches
more programs than rows and stores past the end of its output, returns the right numbers: the read
lands in the caching allocator's slack and the store in memory nobody checks. Triton's
interpreter makes the same accesses with raw addresses in the fuzzer's own process: a read returns
whatever lies there, a write corrupts the heap, and the verdict was a pass or an unexplained crash.

:func:`install` makes the interpreter's builder check every lane of ``tl.load``, ``tl.store`` and
the atomics that its mask lets through (``create_masked_load``, ``create_masked_store``, and the
unmasked and atomic forms, which go through them or are wrapped alike) against the launch's tensor
arguments: an access wholly inside the memory one of them spans (from its first element to its
last, the gaps of a strided view included) is allowed; any other raises :class:`OutOfBounds`
before the access,
naming the kernel, its source line, the program id, the access, the tensor argument nearest to the
address and the offset in its elements ("out[7]: 1 element past the end of a 7-element tensor").
Masked-off lanes are never judged: reading them is what masks are for.

The span, not the storage: a tensor is often a view of a larger buffer (a slice of a batch, the
fuzzer's own inputs, which keep a guard band after their last element to catch writes), and a
kernel that reads past its last row reads its neighbour's data there, or unmapped memory once
the buffer ends. On a GPU the same read is seen by compute-sanitizer only past the allocation.

The launch's tensors are recorded as its arguments are copied to the host (``GridExecutor.
_init_args_hst``, every launch's first step), under their parameter names. Light on purpose, like
the other corrections: the standard library, NumPy and Triton, because it runs in the isolated
worker. On a GPU nothing here runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass

import numpy as np

from lse_fuzz._errors import LseFuzzError

from . import initialized as fresh

__all__ = ["OutOfBounds", "UninitializedRead", "install", "installed", "judge_result", "judging", "violation_in"]

_PATCHED = "_lse_fuzz_bounds"
_HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # fuzz/


class OutOfBounds(LseFuzzError):
    """A lane of a load, store or atomic of an interpreted kernel addressed memory outside every
    tensor argument of its launch. ``where`` says which lane and tensor, as a person reads it."""

    check = "memory_bounds"  # the check it fails
    what = "out of bounds"

    def __init__(self, access: str, kernel: str, line: str, program: tuple, where: str, lanes: int) -> None:
        self.access, self.kernel, self.line, self.program, self.where, self.lanes = \
            access, kernel, line, tuple(program), where, lanes
        more = f" ({lanes} lanes {self.what}, the first shown)" if lanes > 1 else ""
        super().__init__(f"{self.title} {access} in {kernel} at {line}, program {self.program}: {where}{more}")

    title = "out-of-bounds"

    def __reduce__(self):  # crosses the worker's pipe as itself
        return (type(self), (self.access, self.kernel, self.line, self.program, self.where, self.lanes))

    def to_dict(self) -> dict:
        return {"check": self.check, "access": self.access, "kernel": self.kernel, "line": self.line, "program": list(self.program),
                "where": self.where, "lanes": self.lanes}

    @classmethod
    def from_dict(cls, said: object) -> OutOfBounds | None:
        """The violation a worker reported (None for anything malformed)."""
        if not isinstance(said, dict):
            return None
        texts = [said.get(k) for k in ("access", "kernel", "line", "where")]
        program, lanes = said.get("program"), said.get("lanes")
        if not all(isinstance(t, str) for t in texts) or not isinstance(lanes, int) \
                or not isinstance(program, list) or not all(isinstance(p, int) for p in program):
            return None
        access, kernel, line, where = (t[:300] for t in texts)
        kind = UninitializedRead if said.get("check") == UninitializedRead.check else OutOfBounds
        return kind(access, kernel, line, tuple(program[:3]), where, lanes)


class UninitializedRead(OutOfBounds):
    """A lane of a load or atomic of an interpreted kernel read bytes of a ``torch.empty`` allocation of
    the call that nothing wrote (or the call handed such bytes back as its result): see
    :mod:`fuzz.interpreter.initialized`."""

    check = "uninitialized_read"
    what = "unwritten"
    title = "uninitialized"


def violation_in(exc: BaseException | None) -> OutOfBounds | None:
    """The :class:`OutOfBounds` in ``exc`` or its causes and contexts (the interpreter wraps it in an
    ``InterpreterError``), or None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OutOfBounds):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


@dataclass(frozen=True)
class _Region:
    name: str  # the kernel parameter the tensor was passed as
    start: int  # its first element's address
    end: int  # one past its last element's last byte
    element_size: int
    numel: int


_REGIONS: list[_Region] = []  # the current launch's tensor arguments
_JUDGING = [True]  # off while a run that did not select memory_bounds calls (judging)


@contextlib.contextmanager
def judging(enabled: bool, *, initialized: bool = False):
    """Check the accesses of the launches within (``enabled``), or let them happen unchecked, as
    Triton's interpreter does (a run whose checks leave ``memory_bounds`` out); with
    ``initialized``, also the reads of memory the call allocated and nothing wrote
    (``uninitialized_read``, :mod:`fuzz.interpreter.initialized`; only where the interpreter runs)."""
    previous, _JUDGING[0] = _JUDGING[0], bool(enabled)
    try:
        with fresh.tracking(initialized and installed()):
            yield
    finally:
        _JUDGING[0] = previous


def judge_result(out) -> None:
    """Raise :class:`UninitializedRead` when the call's result holds bytes of an allocation it made
    that nothing wrote (a kernel that skipped storing some rows): the caller reads them next."""
    unwritten = fresh.check_result(out)
    if unwritten is None:
        return
    which, index, count, site = unwritten
    more = f" ({count} elements never written, the first shown)" if count > 1 else ""
    where = f"{which}[{index}] was never written since {site} allocated it{more}"
    raise UninitializedRead("return", "the call", "its return", (0, 0, 0), where, 1)


def _regions_of(names, values) -> list[_Region]:
    regions = []
    for name, value in zip(names, values):
        if isinstance(value, tuple):
            regions += _regions_of([f"{name}[{i}]" for i in range(len(value))], value)
            continue
        value = getattr(value, "base", value) if not hasattr(value, "untyped_storage") else value  # a descriptor
        if not hasattr(value, "untyped_storage") or not hasattr(value, "data_ptr"):
            continue
        try:
            start, size, numel = value.data_ptr(), value.element_size(), value.numel()
            span = 0 if numel == 0 else 1 + sum((n - 1) * abs(s) for n, s in zip(value.shape, value.stride()))
        except (RuntimeError, TypeError, AttributeError):  # a tensor subclass without storage: nothing to check
            continue
        regions.append(_Region(name, start, start + span * size, size, numel))
    return regions


def _describe(address: int, size: int) -> str:
    """'out[7]: 1 element past the end of a 7-element tensor', for the argument nearest ``address``."""
    if not _REGIONS:
        return f"address 0x{address:x}: the launch has no tensor argument"

    def distance(region: _Region) -> int:
        return 0 if region.start <= address < region.end else min(abs(address - region.start),
                                                                  abs(address - (region.end - 1)))

    region = min(_REGIONS, key=distance)
    offset, remainder = divmod(address - region.start, region.element_size)
    index = f"{region.name}[{offset}]" if remainder == 0 else f"{region.name} + {address - region.start} bytes"
    spanned = (region.end - region.start) // region.element_size
    tensor = f"a {region.numel}-element tensor" + (f" spanning {spanned} elements" if spanned != region.numel else "")
    if address >= region.end:
        past = (address - region.end) // region.element_size + 1
        return f"{index}: {past} element{'s' if past != 1 else ''} past the end of {tensor}"
    if address < region.start:
        before = -((address - region.start) // region.element_size)
        return f"{index}: {before} element{'s' if before != 1 else ''} before the start of {tensor}"
    return f"{index}: {size} bytes that end past the end of {tensor}"


def _kernel_frame():
    """The innermost frame of the kernel's own code (not Triton's, not the fuzzer's)."""
    triton_dir = os.path.dirname(os.path.dirname(os.path.realpath(sys.modules["triton"].__file__)))
    return fresh.outer_frame((os.path.join(triton_dir, "triton") + os.sep, _HERE + os.sep), depth=2)


def _check(access: str, builder, ptrs, mask, *, reads: bool = True, writes: bool = False) -> None:
    if not _JUDGING[0] and not fresh.judged():
        return
    addresses = np.asarray(ptrs.data).astype(np.uint64, copy=False)
    live = np.ones(addresses.shape, dtype=bool) if mask is None else np.broadcast_to(
        np.asarray(mask.data).astype(bool), addresses.shape)
    if not live.any():
        return
    element = ptrs.get_element_ty()
    size = max(1, getattr(element, "primitive_bitwidth", 8) // 8)
    wanted = addresses[live]
    if _JUDGING[0]:
        inside = np.zeros(wanted.shape, dtype=bool)
        for region in _REGIONS:
            inside |= (wanted >= np.uint64(region.start)) & (wanted + np.uint64(size) <= np.uint64(region.end))
        if not inside.all():
            outside = wanted[~inside]
            raise OutOfBounds(access, *_site(builder), _describe(int(outside[0]), size), int(outside.size))
    if not fresh.judged():
        return
    if reads:
        unread = fresh.unwritten(wanted, size)
        if unread is not None:
            address, lanes, allocated = unread
            where = f"{_describe(address, size).split(':')[0]}: never written since {allocated} allocated it"
            raise UninitializedRead(access, *_site(builder), where, lanes)
    if writes:
        fresh.stored(wanted, size)


def _site(builder) -> tuple[str, str, tuple]:
    """(the kernel, its source line, the program id) of the access being made."""
    frame = _kernel_frame()
    kernel = frame.f_code.co_name if frame is not None else "the kernel"
    line = "an unknown line"
    if frame is not None:
        import linecache  # noqa: PLC0415 (only when reporting)
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        line = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" + (f" `{text}`" if text else "")
    program = tuple(int(i) for i in getattr(builder, "grid_idx", (0, 0, 0)))
    return kernel, line, program


def install() -> bool:
    """Check every access of the interpreter's builder; idempotent. False (nothing changed) for a
    Triton whose interpreter has no such builder or launch."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    executor = getattr(interpreter, "GridExecutor", None)
    methods = ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas")
    if builder is None or executor is None or not all(callable(getattr(builder, m, None)) for m in methods) \
            or not callable(getattr(executor, "_init_args_hst", None)):
        return False
    if getattr(builder.create_masked_load, _PATCHED, False):
        return True
    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas, init = builder.create_atomic_rmw, builder.create_atomic_cas, executor._init_args_hst

    def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
        _check("load", self, ptrs, mask)
        return load(self, ptrs, mask, other, *args, **kwargs)

    def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
        _check("store", self, ptrs, mask, reads=False, writes=True)
        return store(self, ptrs, value, mask, *args, **kwargs)

    def create_atomic_rmw(self, op, ptr, val, mask, *args, **kwargs):
        # An exchange writes without reading what was there; every other atomic combines with it.
        _check("atomic", self, ptr, mask, reads="XCHG" not in str(op).upper(), writes=True)
        return rmw(self, op, ptr, val, mask, *args, **kwargs)

    def create_atomic_cas(self, ptr, cmp, val, *args, **kwargs):
        _check("atomic", self, ptr, None, writes=True)
        return cas(self, ptr, cmp, val, *args, **kwargs)

    def _init_args_hst(self, args_dev, kwargs, *rest, **more):
        with fresh.paused():  # the host copies it makes (new_empty, set_) are not the candidate's writes
            args_hst, kwargs_hst = init(self, args_dev, kwargs, *rest, **more)
        names = list(getattr(self, "arg_names", None) or [f"argument {i}" for i in range(len(args_hst))])
        _REGIONS[:] = _regions_of(names, args_hst) + _regions_of(list(kwargs_hst), list(kwargs_hst.values()))
        return args_hst, kwargs_hst

    for name, function in (("create_masked_load", create_masked_load), ("create_masked_store", create_masked_store),
                           ("create_atomic_rmw", create_atomic_rmw), ("create_atomic_cas", create_atomic_cas)):
        setattr(function, _PATCHED, True)
        setattr(builder, name, function)
    setattr(_init_args_hst, _PATCHED, True)
    executor._init_args_hst = _init_args_hst
    restore = getattr(executor, "_restore_args_dev", None)
    if callable(restore):
        def _restore_args_dev(self, *args, **kwargs):
            with fresh.paused():  # copying the host copies back is the interpreter's, not a write of the call
                return restore(self, *args, **kwargs)

        executor._restore_args_dev = _restore_args_dev
    return True


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    method = getattr(getattr(interpreter, "InterpreterBuilder", None), "create_masked_load", None)
    return getattr(method, _PATCHED, False)
