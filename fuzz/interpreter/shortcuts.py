"""Triton's language layer without the work it repeats, in the interpreter: the same values, sooner.

In Triton's interpreter every operation of a kernel goes through the language layer
(``triton.language.semantic`` and the types of ``triton.language.core``) once per program, as the
compiler goes through it once per kernel: a kernel of 20 operations launched on 64 rows is 1,280
trips, and that layer, not NumPy, is what an interpreted check spends its time in. A cProfile of a
one-program-per-row kernel's check (online_single_pass.py, 200 examples, Triton 3.9, with
:mod:`.pace`) found, in 52 s: 980,000 Triton tuples built for the shapes of 620,000 values
(6.3 s), 265,000 block types built and validated (6.0 s), 3.1 million ``_unwrap_if_constexpr``
calls (4.6 s), two broadcasts per binary operation of two blocks of one shape (8.6 s), and a
dictionary rebuilt for each of 530,000 builtin calls. :func:`install` replaces six pieces of that
work, each only in its common case and each returning what Triton's own code returns:

- **Broadcasting two blocks of one shape.** ``broadcast_impl_value`` compares the blocks' shape (a
  Triton tuple) with the broadcast shape (a list), which are never equal, so it "broadcasts" both
  operands of every such operation: two ``np.broadcast_to`` views of the same shape and two new
  values. The operands are returned as they are (the interpreter's semantic only; same values,
  same types; the views would have been read-only, and nothing in the interpreter writes a value's
  data in place).
- **A value's shape and element count.** ``tensor.__init__`` builds a Triton tuple of constexprs
  and a constexpr for every value; they depend on the block shape alone (already validated by its
  block type) and nothing changes them, so each shape's pair is built once and shared.
- **A block type's shape.** ``block_type.__init__`` unwraps and validates its shape each time;
  for a shape of plain ints seen before, the validated shape and count are reused. Any other shape
  (constexprs, an invalid one) goes through Triton's code, errors included.
- **Calling a builtin.** The interpreter wraps each builtin in a lambda that copies the keyword
  arguments without ``_semantic`` and adds its own, then calls Triton's ``builtin`` wrapper, which
  checks that ``_semantic`` is there; the replacement sets the keyword and, for that wrapper, calls
  the function it wraps.
- **``_unwrap_if_constexpr`` of a plain value** (an int, a float, a value, a type) returns it at
  once, as the function does after four ``isinstance`` checks; a constexpr gives its value, and
  anything else (lists, tuples) goes to Triton's function.
- **The type an operation computes in** (``computation_type_impl``: the promotion rules, a pure
  function of the two types, whether each is a Python scalar, and whether it divides) is
  remembered per question; a refusal (a ``TypeError``) is raised each time and not kept.

Each is installed only where Triton's code is laid out as this module expects (a probe compares
what it builds), else left as it is. Measured on the 2-core CPU machine (the first five; bench/RESULTS.md,
2026-12-07): ``lse-fuzz check`` of the corpus's 27 correct implementations, the time in calls 478 s
before, 393 s after, the median check of the 19 Triton kernels 17.0 s before, 13.2 s after.
Installed with the other corrections of the interpreter (:mod:`.repairs`), so only where kernels
are interpreted.
"""

from __future__ import annotations

import builtins
import inspect
import sys
import types

__all__ = ["install", "installed"]

_MARK = "_lse_fuzz_shortcuts"
_REPLACED: list[tuple[object, str, object]] = []  # (owner, attribute, Triton's own), in install order


def install() -> bool:
    """Install the shortcuts Triton's layout allows; idempotent. False where none could be."""
    try:
        import triton.language.core as core
        from triton.runtime import interpreter
    except ImportError:
        return False
    if getattr(core, _MARK, False):
        return True
    done = [_same_shape_broadcast(interpreter), _tensor_shapes(core), _block_shapes(core),
            _builtin_calls(interpreter, core), _plain_unwrap(core), _computation_types(interpreter)]
    setattr(core, _MARK, True)
    return any(done)


def installed() -> bool:
    core = sys.modules.get("triton.language.core")
    return bool(getattr(core, _MARK, False))


def _replace(owner, name: str, replacement) -> None:
    original = getattr(owner, name)
    setattr(replacement, _MARK, True)
    replacement.__wrapped__ = original
    _REPLACED.append((owner, name, original))
    setattr(owner, name, replacement)


def _dims(shape):
    """A shape's dimensions as a tuple of ints (Triton's tuples and constexprs unwrapped), else None."""
    values = getattr(shape, "values", shape)
    if type(values) not in (list, builtins.tuple):
        return None
    dims = builtins.tuple(values)
    for dim in dims:
        if type(dim) is not int:
            return None
    return dims


def _semantic_method(interpreter, name: str):
    """The interpreter's semantic and its method ``name``; (None, None) where either is missing or
    the method is already a shortcut."""
    semantic = getattr(interpreter, "interpreter_semantic", None)
    original = getattr(semantic, name, None)
    if not callable(original) or getattr(original, _MARK, False):
        return None, None
    return semantic, original


def _same_shape_broadcast(interpreter) -> bool:
    semantic, original = _semantic_method(interpreter, "broadcast_impl_value")
    if original is None:
        return False

    def broadcast_impl_value(lhs, rhs):
        left, right = lhs.type, rhs.type
        if left.is_block() and right.is_block():
            shape = _dims(left.shape)
            if shape is not None and shape == _dims(right.shape):
                return lhs, rhs
        return original(lhs, rhs)

    _replace(semantic, "broadcast_impl_value", broadcast_impl_value)  # this instance only: the compiler's stays
    return True


def _computation_types(interpreter) -> bool:
    semantic, original = _semantic_method(interpreter, "computation_type_impl")
    if original is None:
        return False
    known: dict[tuple, object] = {}

    def computation_type_impl(a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod):
        key = (a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod)
        try:
            return known[key]
        except KeyError:  # first asked (a refusal raises here, every time, and is not kept)
            known[key] = answer = original(a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod)
            return answer
        except TypeError:  # an unhashable type: asked every time
            return original(a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod)

    _replace(semantic, "computation_type_impl", computation_type_impl)
    return True


def _probe(cls, *args) -> object | None:
    """A bare instance of ``cls`` built by its own ``__init__``, or None if that fails."""
    try:
        instance = cls.__new__(cls)
        cls.__init__(instance, *args)
    except Exception:
        return None
    return instance


def _tensor_shapes(core) -> bool:
    tensor, block_type = getattr(core, "tensor", None), getattr(core, "block_type", None)
    if tensor is None or block_type is None or getattr(tensor.__init__, _MARK, False):
        return False
    original = tensor.__init__
    probe = _probe(tensor, None, _probe(block_type, core.float32, [2, 4]))
    if probe is None or set(vars(probe)) != {"handle", "shape", "numel", "type", "dtype"}:
        return False
    known: dict[tuple, tuple] = {}

    def __init__(self, handle, type):
        dims = _dims(type.shape) if type.is_block() else ()
        shared = known.get(dims) if dims is not None else None
        if shared is None:
            original(self, handle, type)
            if dims is not None:
                known[dims] = (self.shape, self.numel)
            return
        self.handle, self.type, self.dtype = handle, type, type.scalar
        self.shape, self.numel = shared

    _replace(tensor, "__init__", __init__)
    return True


def _block_shapes(core) -> bool:
    block_type = getattr(core, "block_type", None)
    if block_type is None or getattr(block_type.__init__, _MARK, False):
        return False
    original = block_type.__init__
    probe = _probe(block_type, core.float32, [2, 4])
    if probe is None or set(vars(probe)) != {"element_ty", "shape", "numel", "name"} or _dims(probe.shape) != (2, 4):
        return False
    known: dict[tuple, tuple] = {}  # (the shape's type, its dimensions) -> shape, count, text

    def __init__(self, element_ty, shape):
        # Keyed by the shape's own type too: Triton's code accepts some containers and not others.
        dims = _dims(shape)
        key = (type(shape), dims) if dims is not None else None
        shared = known.get(key) if key is not None else None
        if shared is None:
            original(self, element_ty, shape)
            if key is not None:
                known[key] = (self.shape, self.numel, str(self.shape))
            return
        self.element_ty = element_ty
        self.shape, self.numel, text = shared
        self.name = f"<{text}, {element_ty}>"

    _replace(block_type, "__init__", __init__)
    return True


def _builtin_calls(interpreter, core) -> bool:
    original = getattr(interpreter, "_patch_attr", None)
    builtin, scope_class = getattr(core, "builtin", None), getattr(interpreter, "_LangPatchScope", None)
    if not callable(original) or builtin is None or scope_class is None or getattr(original, _MARK, False):
        return False
    if list(inspect.signature(original).parameters) != ["obj", "name", "member", "builder", "scope"]:
        return False
    # Triton's wrapper as others read it (fuzz.interpreter.frontend): its name, the builtin in ``member``.
    holder, member = types.SimpleNamespace(), getattr(core, "cast", None)
    try:
        original(holder, "cast", member, None, scope_class())
    except Exception:
        return False
    theirs = getattr(holder, "cast", None)
    if (getattr(theirs, "__kwdefaults__", None) or {}).get("member") is not member:
        return False
    wrapper_code = builtin(lambda *args, **kwargs: None).__code__  # Triton's check-then-call wrapper

    def _patch_attr(obj, name, member, builder, scope):
        wrapped = getattr(member, "__wrapped__", None)
        target = wrapped if getattr(member, "__code__", None) is wrapper_code and wrapped is not None else member

        def new_member(*args, member=member, **kwargs):
            kwargs["_semantic"] = interpreter.interpreter_semantic
            return target(*args, **kwargs)

        new_member.__qualname__, new_member.__name__ = theirs.__qualname__, theirs.__name__
        scope.set_attr(obj, name, new_member)

    _replace(interpreter, "_patch_attr", _patch_attr)
    return True


def _plain_unwrap(core) -> bool:
    original = getattr(core, "_unwrap_if_constexpr", None)
    constexpr = getattr(core, "constexpr", None)
    if not isinstance(original, types.FunctionType) or constexpr is None or getattr(original, _MARK, False):
        return False
    containers = (list, builtins.tuple, constexpr) + ((core.tuple,) if isinstance(getattr(core, "tuple", None), type) else ())
    plain = frozenset(kind for kind in (int, float, bool, type(None), str, getattr(core, "tensor", None),
                                        getattr(core, "dtype", None), getattr(core, "pointer_type", None),
                                        getattr(core, "block_type", None))
                      if isinstance(kind, type) and not issubclass(kind, containers))

    def _unwrap_if_constexpr(o):
        kind = type(o)
        if kind in plain:
            return o
        if kind is constexpr:
            return o.value
        return original(o)

    # Rebound wherever Triton's modules hold the function (core itself, and those that imported it).
    for name, module in list(sys.modules.items()):
        if name.startswith("triton.") and getattr(module, "_unwrap_if_constexpr", None) is original:
            _replace(module, "_unwrap_if_constexpr", _unwrap_if_constexpr)
    return True
