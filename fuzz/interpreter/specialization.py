"""What Triton would compile: the specialization key of every kernel launch, counted without a GPU.

Triton compiles one binary per kernel and *specialization key*, the classes of a launch's
arguments (Triton 3.x, ``triton/runtime/jit.py``; the C++ ``native_specialize_impl`` in 3.6+):

* a ``tl.constexpr`` argument: its value (every BLOCK size is another binary);
* an integer: i32, i64 or u64 by its range, and ``"D"`` when divisible by 16, ``""`` when not;
  an integer equal to 1 becomes the constant 1 (its own class);
* a tensor (pointer): ``*`` plus its dtype (``*fp32``, ``*bf16``), and ``"D"`` when its data
  pointer is 16-byte aligned;
* a float: fp32, a bool: u1, None: a constant (none of them split further);
* parameters named in ``do_not_specialize`` keep only their type, those in
  ``do_not_specialize_on_alignment`` are not split on "D";
* the launch options (``num_warps``, ``num_stages``, ...).

On a GPU each new key is one compile (a disk-cache hit in later runs); in Triton's interpreter
nothing compiles, but the same launches have the same keys. Counting the distinct keys of a run
gives a CPU run and a GPU run one comparable number, *variants*, and shows which argument
classes drive it::

    LSE_FUZZ_VARIANTS=/tmp/v.jsonl lse-fuzz check kernel.py:lse --device cpu
    count_variants(read_records("/tmp/v.jsonl"))

Every worker (``fuzz.isolation.worker.process``) calls :func:`install`, which wraps ``run`` of
Triton's ``JITFunction`` and ``InterpretedFunction`` (what ``kernel[grid](...)``, autotuners and
heuristics all call) and counts the keys new to that process (:func:`launched`, which each reply
carries: a run's report counts its specializations); with :data:`ENV` set to a file path it also
appends one JSON line per such key. A key is computed by :func:`launch_key` from the kernel's Python signature, so it
needs no GPU and no Triton internals; ``tests/bench`` checks its argument classes against the
installed Triton's own specializer where that is importable. Light on purpose, like
:mod:`fuzz.interpreter.autotune`: the standard library and Triton only.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping

__all__ = ["ENV", "argument_class", "class_text", "count_variants", "drivers", "counting", "install", "launch_key", "launched",
           "read_records", "summarize"]

ENV = "LSE_FUZZ_VARIANTS"
"""Environment variable: a file every worker appends the launches' new specialization keys to."""

_DTYPES = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int8": "i8",
    "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
    "uint64": "u64", "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}
_ALIGNMENT = 16  # Triton's divisibility (integers) and alignment (pointers, bytes)


def _pointer_type(dtype: object) -> str:
    name = str(dtype).rpartition(".")[2]
    return "*" + _DTYPES.get(name, name)


def argument_class(value: object, *, specialize: bool = True, align: bool = True) -> tuple:
    """The (type, class) Triton specializes a non-constexpr argument on, as its
    ``native_specialize_impl(backend, value, False, specialize, align)`` returns it."""
    if value is None:
        return ("constexpr", None)
    if isinstance(value, bool):
        return ("u1", None)
    if isinstance(value, int):
        if specialize and value == 1:
            return ("constexpr", 1)
        kind = "i32" if -2**31 <= value < 2**31 else "u64" if value >= 2**63 else "i64"
        if not specialize:
            return (kind, None)
        return (kind, "D" if align and value % _ALIGNMENT == 0 else "")
    if isinstance(value, float):
        return ("fp32", None)
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        kind = _pointer_type(value.dtype)
        if not specialize:
            return (kind, None)
        return (kind, "D" if align and value.data_ptr() % _ALIGNMENT == 0 else "")
    if isinstance(value, tuple):
        return tuple(argument_class(v, specialize=specialize, align=align) for v in value)
    return (type(value).__name__, None)


def _constant(value: object) -> object:
    """A constexpr's value as JSON: numbers, strings and None as they are, anything else (a
    ``tl.dtype``, a JIT function) by its text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    value = getattr(value, "value", value)  # tl.constexpr(4) -> 4
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(getattr(value, "__name__", value))


@functools.cache
def _parameters(fn) -> tuple[inspect.Signature, tuple[tuple[str, bool], ...]]:
    signature = inspect.signature(fn)
    return signature, tuple((name, "constexpr" in str(p.annotation)) for name, p in signature.parameters.items())


@functools.cache
def kernel_name(fn) -> str:
    """``qualname@digest``, the digest over the kernel's source and those of the JIT functions it
    calls (and the constexpr globals it reads), as Triton's cache key is: two edits of one kernel
    or of a helper it calls (two mutants, two graded copies) are two kernels; the same source
    loaded as two modules (the reference and a mutant that changed only its launcher) is one."""
    digest = hashlib.sha256()
    _hash_source(fn, digest, set())
    return f"{getattr(fn, '__qualname__', repr(fn))}@{digest.hexdigest()[:12]}"


def _hash_source(fn, digest, seen: set[int]) -> None:
    if id(fn) in seen:
        return
    seen.add(id(fn))
    try:
        digest.update(inspect.getsource(fn).encode())
    except (OSError, TypeError):
        digest.update(repr(fn).encode())
    code, names = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    for name in sorted(set(code.co_names) if code else ()):
        value = names.get(name)
        inner = getattr(value, "fn", None)  # JITFunction and InterpretedFunction keep the Python function as .fn
        if inner is not None and hasattr(inner, "__code__"):
            _hash_source(inner, digest, seen)
        elif type(value).__name__ == "constexpr":
            digest.update(f"{name}={getattr(value, 'value', value)!r}".encode())


def _indices(names: Iterable, params: tuple[tuple[str, bool], ...]) -> set[str]:
    """Parameter names from Triton's ``do_not_specialize`` lists (indices or names)."""
    out = set()
    for item in names or ():
        out.add(params[item][0] if isinstance(item, int) and item < len(params) else str(item))
    return out


def launch_key(fn, args: tuple, kwargs: Mapping[str, object], *, do_not_specialize: Iterable = (),
               do_not_specialize_on_alignment: Iterable = ()) -> list:
    """The specialization key of ``fn[grid](*args, **kwargs)`` as a JSON-able list: one entry per
    parameter, ``[name, "constexpr", value]`` or ``[name, type, class]``, then the launch options
    (keyword arguments that are not parameters, e.g. ``num_warps``) sorted by name."""
    signature, params = _parameters(fn)
    names = {name for name, _ in params}
    bound = signature.bind(*args, **{k: v for k, v in kwargs.items() if k in names})
    bound.apply_defaults()
    fixed = _indices(do_not_specialize, params)
    unaligned = _indices(do_not_specialize_on_alignment, params)
    key: list = []
    for name, constexpr in params:
        value = bound.arguments[name]
        if constexpr:
            key.append([name, "constexpr", _constant(value)])
        else:
            cls = argument_class(value, specialize=name not in fixed, align=name not in unaligned)
            key.append([name, *cls] if len(cls) == 2 and not isinstance(cls[0], tuple) else [name, "tuple", cls])
    key += [[name, "option", _constant(kwargs[name])] for name in sorted(kwargs) if name not in names]
    return key


# --------------------------------------------------------------------------------------------
# Recording the launches of a process, and reading them back


class _Launches:
    """The specialization keys this process launched (each once), and the file they also go to."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.kernels: set[str] = set()  # the keys that could be computed: one per binary a GPU compiles
        self.path: str | None = None
        self.runs: list[set[str]] = []  # the keys of each run under way (counting())


_LAUNCHES = _Launches()


def install(path: str | os.PathLike | None = None) -> None:
    """Wrap ``run`` of every Triton kernel class importable here so each launch's key, when new to
    this process, is counted (:func:`launched`) and, with ``path``, appended to that file as
    ``{"kernel": ..., "key": [...]}`` (``{"kernel": ..., "error": ...}`` when the key cannot be
    computed; the launch itself always goes ahead). Idempotent: a later call only sets the file."""
    if path is not None:
        _LAUNCHES.path = os.fspath(path)
    # Looked up here, not imported at the top: only a counting run touches the interpreter's module.
    for module, cls_name in (("triton.runtime.jit", "JITFunction"), ("triton.runtime.interpreter", "InterpretedFunction")):
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError):
            continue
        if getattr(cls.run, "_lse_fuzz_variants", False):
            continue
        cls.run = _recording(cls.run)


def launched() -> int:
    """How many distinct specialization keys this process launched since :func:`install`: the
    binaries a GPU compiles for those launches (a compile each, cold), counted on any device."""
    return len(_LAUNCHES.kernels)


@contextlib.contextmanager
def counting() -> Iterator[Callable[[], int]]:
    """``with counting() as launched_here:`` the distinct keys launched inside the block (known to
    the process before or not): one run's specializations, whatever ran in the process before it."""
    keys: set[str] = set()
    _LAUNCHES.runs.append(keys)
    try:
        yield lambda: len(keys)
    finally:
        _LAUNCHES.runs.remove(keys)


def _recording(run):
    @functools.wraps(run)
    def recorded(self, *args, grid=None, warmup=False, **kwargs):
        fn = getattr(self, "fn", None)
        try:
            options = getattr(self, "kwargs", None) or {}  # InterpretedFunction keeps its decorator's options here
            record = {"kernel": kernel_name(fn), "key": launch_key(
                fn, args, kwargs,
                do_not_specialize=getattr(self, "do_not_specialize", None) or options.get("do_not_specialize") or (),
                do_not_specialize_on_alignment=getattr(self, "do_not_specialize_on_alignment", None)
                or options.get("do_not_specialize_on_alignment") or ())}
        except Exception as exc:  # noqa: BLE001 - counting must never change what the kernel does
            record = {"kernel": repr(fn), "error": f"{type(exc).__name__}: {exc}"}
        line = json.dumps(record, sort_keys=True)
        if "key" in record:
            for keys in _LAUNCHES.runs:
                keys.add(line)
        if line not in _LAUNCHES.seen:
            _LAUNCHES.seen.add(line)
            if "key" in record:
                _LAUNCHES.kernels.add(line)
            if _LAUNCHES.path is not None:
                with open(_LAUNCHES.path, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
        return run(self, *args, grid=grid, warmup=warmup, **kwargs)

    recorded._lse_fuzz_variants = True
    return recorded


def read_records(path: str | os.PathLike) -> list[dict]:
    """The records :func:`install` wrote (every process's), in file order; none for a missing file."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def count_variants(records: Iterable[Mapping]) -> int:
    """Distinct (kernel, key) pairs: the binaries a GPU run of the same launches compiles."""
    return len({(r["kernel"], json.dumps(r["key"], sort_keys=True)) for r in records if "key" in r})


def class_text(cls: list) -> str:
    """One argument's class as a reader wants it: a constexpr or option by its value (``1024``,
    ``1`` for an integer equal to 1), else its type and ``/D`` when divisible or aligned
    (``i32/D``, ``*fp16``)."""
    if cls[0] in ("constexpr", "option"):
        return json.dumps(cls[1])
    if cls[0] == "tuple":
        return json.dumps(cls[1])
    return f"{cls[0]}/{cls[1]}" if cls[1] else str(cls[0])


def _order(text: str) -> tuple:
    """Numbers by value (2 before 16 before 1024), then everything else by its text."""
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def summarize(records: Iterable[Mapping]) -> dict[str, object]:
    """Variants, kernels, errors, and per kernel parameter the distinct classes seen (what drives the
    count): ``{"variants": n, "kernels": k, "errors": e, "classes": {"kernel": {"BLOCK_N": [...]}}}``."""
    records = list(records)
    distinct = {(r["kernel"], json.dumps(r["key"], sort_keys=True)): r for r in records if "key" in r}
    classes: dict[str, dict[str, set]] = {}
    for (kernel, _), record in distinct.items():
        short = kernel.partition("@")[0].rpartition(".")[2]
        per = classes.setdefault(short, {})
        for name, *cls in record["key"]:
            per.setdefault(name, set()).add(class_text(cls))
    return {
        "variants": len(distinct),
        "kernels": len({kernel for kernel, _ in distinct}),
        "errors": sum(1 for r in records if "error" in r),
        "classes": {k: {name: sorted(v, key=_order) for name, v in per.items() if len(v) > 1}
                    for k, per in classes.items()},
        "drivers": drivers(distinct.values()),
    }


_GROUPS = {
    "constexprs and options": lambda entry: entry[1] in ("constexpr", "option") and entry[1:] != ["constexpr", 1],
    "pointers (dtype, alignment)": lambda entry: str(entry[1]).startswith("*"),
    "integers (==1, %16, width)": lambda entry: entry[1:] == ["constexpr", 1] or str(entry[1])[:1] in "iu",
}


def drivers(records: Iterable[Mapping]) -> dict[str, int]:
    """What the variants are made of: the distinct keys there would be if only one group of
    arguments split (constexprs and launch options; pointer arguments by dtype and alignment;
    integer arguments by ==1, divisibility by 16 and width), summed over kernels. Their product
    bounds the variants; a count near the product means the groups combine freely."""
    keys = {(r["kernel"], json.dumps(r["key"], sort_keys=True)): r for r in records if "key" in r}
    out = {}
    for group, member in _GROUPS.items():
        out[group] = len({(kernel, json.dumps([e for e in r["key"] if member(e)])) for (kernel, _), r in keys.items()})
    return out
