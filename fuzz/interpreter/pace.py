"""Triton's interpreter patches the language once per launch, not once per helper call.

In Triton's interpreter a ``@triton.jit`` function called from a kernel (``tl.max``, ``tl.sum``
and the rest of ``triton.language.standard`` are such functions, and so is every helper a
kernel's author writes) is an ``InterpretedFunction``, whose ``__call__`` first runs
``_patch_lang`` on its module: ``inspect.getmembers`` over ``triton.language``, its ``tensor``
class and ``math``, a wrapper set on every builtin it finds. The launch itself (``GridExecutor``)
already did the same for the kernel's module, and nothing is restored until the launch ends, so
from the second call on a helper's patching sets again what is already set. It is the largest
cost of an interpreted run: on the 2-core CPU machine a one-program-per-row kernel spent 41 s of
74 s (cProfile, 100 examples, Triton 3.9) patching, 22,947 times for 249 launches.

:func:`install` keeps a memo per launch: the first ``_patch_lang`` of each set of language modules
(``triton.language``, ``triton.language.core``) in a launch runs as before, a later one for the
same set is skipped until the launch ends (the memo is cleared at each launch's start and end).
What the kernel computes does not change: the skipped calls would have set the same wrappers,
and a helper's patching is never undone in Triton (its scope is dropped), so nothing a skipped
call would have restored is left behind either.

The interpreter also looks up a Triton type's NumPy dtype (``_get_np_dtype``) for every value it
makes, by building a table of 19 types each time (4 s of 60 in the same profile for a two-pass
kernel): :func:`install` keeps the answers, per type, as they are.

And it reduces with NumPy only for the combine functions of ``tl.max``, ``tl.min``, ``tl.sum`` and
the arg-reductions; every other one it calls once per element, in Python. ``tl.reduce_or`` and
``tl.xor_sum`` (how kernels gather per-lane NaN and +inf flags) are Triton's own bitwise
combines, exact and associative on integers: :func:`install` reduces them with NumPy's
``bitwise_or`` and ``bitwise_xor``, the same values at once (a correct kernel that gathers its
flags with ``tl.reduce_or`` took 137 s for a default check on the 2-core CPU machine, 19 s after).
A kernel's own combine function is still called per element, as Triton does.

And every ``+``, ``-`` and ``*`` of 32-bit integers (a kernel's index math) carries Triton's overflow
check (``sanitize_overflow``): both operands cast to int64, the operation done again, two
comparisons, then ``device_assert``, which does nothing unless the interpreter's ``debug`` option is
on, and nothing in the interpreter turns it on. On a GPU the same check is compiled only to be
dropped with its assert (``debug`` off, the default). :func:`install` turns the check off while
``debug`` is off: the values are the same (the check computes on copies), and the reference kernel's
60-example check on the 2-core CPU machine went from 4.9 s to 4.0 s (from 7.7 s to 4.8 s, first run).

Installed wherever the fuzzer runs a kernel in the interpreter, with :mod:`fuzz.interpreter.bfloat16`.
"""

from __future__ import annotations

import dataclasses
import inspect

__all__ = ["install", "installed"]

_PATCHED = "_lse_fuzz_patch_once"


class _NothingToRestore:
    """What a skipped ``_patch_lang`` returns: the caller that keeps it (none does for a helper)
    restores nothing, as the patching it stands for is the launch's own."""

    def restore(self) -> None:
        pass


class _Launch:
    """The language sets already patched in the launch under way (None between launches), and
    each module's set, found once per launch (a module's globals do not change during one)."""

    def __init__(self) -> None:
        self.patched: set[tuple[int, ...]] | None = None
        self.languages: dict[int, tuple[int, ...]] = {}


def _languages(fn, language, core) -> tuple[int, ...]:
    # The modules Triton's _patch_lang patches for ``fn``: those of its globals that are the language.
    return tuple(sorted({id(value) for value in fn.__globals__.values()
                         if inspect.ismodule(value) and (value is language or value is core)}))


def install() -> bool:
    """Wrap the interpreter's ``_patch_lang`` and ``GridExecutor.__call__``; idempotent. False
    (nothing changed) for a Triton whose interpreter is laid out otherwise."""
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_lang", None)
    executor = getattr(interpreter, "GridExecutor", None)
    if original is None or executor is None or not callable(getattr(executor, "__call__", None)):
        return False
    if getattr(original, _PATCHED, False):
        return True
    launch = _Launch()
    run_grid = executor.__call__

    def patch_lang(fn, *args, **kwargs):
        if launch.patched is None:
            return original(fn, *args, **kwargs)
        key = launch.languages.get(id(fn.__globals__))
        if key is None:
            key = launch.languages[id(fn.__globals__)] = _languages(fn, tl, tl.core)
        if key in launch.patched:
            return _NothingToRestore()
        scope = original(fn, *args, **kwargs)
        launch.patched.add(key)
        return scope

    def call_grid(self, *args, **kwargs):
        outer = launch.patched
        launch.patched, launch.languages = set(), {}
        try:
            return run_grid(self, *args, **kwargs)
        finally:
            launch.patched, launch.languages = outer, {}

    setattr(patch_lang, _PATCHED, True)
    setattr(call_grid, _PATCHED, True)
    call_grid.__wrapped__ = run_grid
    interpreter._patch_lang = patch_lang
    executor.__call__ = call_grid
    lookup = getattr(interpreter, "_get_np_dtype", None)
    if lookup is not None:
        interpreter._get_np_dtype = _remembered(lookup)
    reduce_ops = getattr(interpreter, "ReduceOps", None)
    if reduce_ops is not None and hasattr(reduce_ops, "apply_impl") and hasattr(reduce_ops, "to_tensor"):
        reduce_ops.apply_impl = _bitwise_at_once(reduce_ops.apply_impl, tl)
    _no_overflow_checks_without_asserts(getattr(interpreter, "interpreter_builder", None))
    return True


def _no_overflow_checks_without_asserts(builder) -> None:
    """The interpreter's options with ``sanitize_overflow`` off, unless ``debug`` (the asserts) is on."""
    options = getattr(builder, "options", None)
    if (dataclasses.is_dataclass(options) and getattr(options, "sanitize_overflow", False)
            and getattr(options, "debug", True) is False):
        builder.options = dataclasses.replace(options, sanitize_overflow=False)


def _bitwise_at_once(apply_impl, tl):
    """``ReduceOps.apply_impl`` with Triton's own bitwise combines done by NumPy in one call."""
    import numpy as np

    standard = getattr(tl, "standard", None)
    ufuncs = {combine: ufunc for name, ufunc in (("_or_combine", np.bitwise_or), ("_xor_combine", np.bitwise_xor))
              if (combine := getattr(standard, name, None)) is not None}

    def apply(self, input):
        ufunc = ufuncs.get(self.combine_fn)
        operand = input[0] if isinstance(input, (tuple, list)) and len(input) == 1 else None
        data = getattr(getattr(operand, "handle", None), "data", None)
        if ufunc is None or data is None or data.dtype.kind not in "iub":
            return apply_impl(self, input)
        return self.to_tensor(ufunc.reduce(data, axis=self.axis, keepdims=self.keep_dims), operand.dtype)

    return apply


def _remembered(lookup):
    """``lookup(tt_dtype)`` remembered per type (Triton's types are immutable and hashable, but for
    block types, whose answer is their elements' type's: Triton's lookup reads only that)."""
    known: dict = {}

    def np_dtype(tt_dtype):
        try:
            return known[tt_dtype]
        except KeyError:
            known[tt_dtype] = answer = lookup(tt_dtype)
            return answer
        except TypeError:  # unhashable: a block type is answered for its elements, another asked each time
            is_block = getattr(tt_dtype, "is_block", None)
            if callable(is_block) and is_block() and hasattr(tt_dtype, "element_ty"):
                return np_dtype(tt_dtype.element_ty)
            return lookup(tt_dtype)

    np_dtype.__wrapped__ = lookup

    return np_dtype


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    return getattr(getattr(interpreter, "_patch_lang", None), _PATCHED, False)
