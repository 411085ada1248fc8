"""A kernel's globals in Triton's interpreter, read as Triton's code generator reads them.

Triton's code generator resolves a kernel's globals by rules of its own (``CodeGenerator.__init__``
and ``visit_Attribute``, Triton 3.9): a module the backend maps (``get_module_map``: on NVIDIA,
``triton.language.extra.libdevice`` is CUDA's ``triton.language.extra.cuda.libdevice``) stands for
the module it maps to, by any name or chain of attributes; a function whose module is mapped
(``log1p = libdevice.log1p``, ``from triton.language.extra.libdevice import expm1``) stands for the
mapped module's function of that name; and a Triton builtin is called with the code generator's
semantic under any name (``to_dtype = tl.cast``, ``exp = tl.exp``, a training library's
``triton_cast``). Triton's interpreter runs the kernel's body as Python instead, and patches only
``triton.language``, ``triton.language.core``, ``tl.math`` and ``tl.tensor``: the stubs of
``triton.language.extra.libdevice`` returned None ("'NoneType' object has no attribute 'dtype'"),
a builtin under another name raised "Did you forget to add @triton.jit ?". The same kernels
compile and run on a GPU, so a correct kernel in a training library's style was ``error`` on the CPU.

:func:`install` applies the code generator's rules. Once: each mapped module's builtins take the
interpreter's semantic when no code generator passes one (to the code generator they are the same
builtins, with their attributes, signature, module and name), and the stub module's functions are
the mapped module's, so ``libdevice.f``, ``tl_libdevice.f`` and ``triton.language.extra.libdevice.f``
reach CUDA's ``f``. For the length of each interpreted launch, in the interpreter's own way (its
``_patch_attr`` wrapper and ``_LangPatchScope``, restored when the launch ends, so the front end
sees the module as written): in the globals of the kernel and of each ``@jit`` helper it calls, a
function of a mapped module bound before :func:`install` is its mapped twin and a builtin under
another name is wrapped. The module map is the NVIDIA backend's, for the front end's target
(:mod:`fuzz.interpreter.frontend`), so a Triton release that maps more modules is followed, not
copied. :mod:`fuzz.interpreter.libdevice` computes what CUDA's libdevice functions compute.

What the code generator refuses is left to it: a plain global (``SCALE = 2.0``) still runs in the
interpreter and is refused by the front end ("Cannot access global variable SCALE"), as on a GPU.

Cost: a module's globals are read once (again only when their number or a rebound value
changes); a launch then rebinds the few names found, a helper's second call finds its module done:
about 0.05 ms a launch, of 4 ms for the smallest interpreted launch.

Light on purpose: the standard library and Triton, because it runs in the isolated worker. On a
GPU the interpreter is never called and nothing changes.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
import weakref

from . import frontend

__all__ = ["install", "installed"]

_PATCHED = "_lse_fuzz_globals"
_STATE: dict = {"module_map": {}, "interpreter": None, "language": None}
_KNOWN: dict[int, tuple] = {}  # id(globals) -> (its module, weakly; the size; {name: value to rebind})


class _Launch:
    """The launch under way: its patch scope (None between launches) and the globals already read."""

    scope = None
    done: set[int] = set()


class _Namespace:
    """A function's globals as attributes, so that the interpreter's patch scope sets and restores them."""

    __slots__ = ("_names",)

    def __init__(self, names: dict) -> None:
        object.__setattr__(self, "_names", names)

    def __getattr__(self, name: str):
        try:
            return self._names[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        self._names[name] = value

    def __delattr__(self, name: str) -> None:
        del self._names[name]


def _mapped(value):
    """The code generator's reading of a global (CodeGenerator.__init__): a function of a mapped
    module is the mapped module's function of that name; anything else is itself."""
    module = getattr(value, "__module__", None)
    if isinstance(module, str) and module in _STATE["module_map"] and callable(value):
        return getattr(_STATE["module_map"][module], getattr(value, "__name__", ""), value)
    return value


def _with_interpreter_semantic(member, semantic):
    """A builtin that takes the interpreter's semantic where no code generator passes one: the
    same builtin to the code generator (its attributes, signature, module and name are copied)."""

    @functools.wraps(member)
    def call(*args, _semantic=None, **kwargs):
        return member(*args, _semantic=semantic if _semantic is None else _semantic, **kwargs)

    setattr(call, _PATCHED, True)
    return call


def _install_mapped_modules(interpreter, is_builtin) -> None:
    """Each mapped module's builtins callable from an interpreted kernel, and the stub module's
    functions the mapped module's (visit_Attribute follows the map from a module, whatever name or
    chain of attributes reached it). Once, for good: a launch then patches nothing more."""
    for name, target in _STATE["module_map"].items():
        for attribute, member in list(vars(target).items()):
            if is_builtin(member) and not getattr(member, _PATCHED, False):
                setattr(target, attribute, _with_interpreter_semantic(member, interpreter.interpreter_semantic))
        stub = importlib.import_module(name)
        if stub is not target:
            for attribute in list(vars(stub)):
                member = vars(target).get(attribute)
                if getattr(member, _PATCHED, False):
                    setattr(stub, attribute, member)


def _to_rebind(fn, names: dict) -> dict:
    """The globals the code generator reads otherwise than Python: {name: value}. Read once per
    module while its namespace's size and those values stay (a module's globals rarely change)."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    key = id(names)
    known = _KNOWN.get(key)
    if (known is not None and known[0]() is module and module is not None and vars(module) is names
            and known[1] == len(names) and all(names.get(name, _KNOWN) is value for name, value in known[2].items())):
        return known[2]
    is_builtin = _STATE["language"].core.is_builtin
    found = {}
    for name, value in list(names.items()):
        if isinstance(value, types.ModuleType):
            continue  # a module's functions are callable where they live (_install_mapped_modules)
        member = _mapped(value)
        if member is not value or is_builtin(member):
            found[name] = value
    if module is not None and vars(module) is names:
        # The module held weakly: fuzz.interpreter.autotune's discovery walks what a kernel's module reaches,
        # the interpreter's wrappers included, and must not find other modules' kernels here.
        _KNOWN[key] = (weakref.ref(module), len(names), found)
    return found


def _rebind_globals(fn, names: dict, scope) -> None:
    """A function's globals as the code generator reads them, for this launch."""
    interpreter, is_builtin = _STATE["interpreter"], _STATE["language"].core.is_builtin
    namespace = _Namespace(names)
    for name, value in _to_rebind(fn, names).items():
        member = _mapped(value)
        if is_builtin(member):
            interpreter._patch_attr(namespace, name, member, interpreter.interpreter_builder, scope)
        else:  # the mapped module's function, callable from the interpreter already
            scope.set_attr(namespace, name, member)


def _patch_lang(original):
    @functools.wraps(original)
    def patch_lang(fn):
        result = original(fn)
        names = getattr(fn, "__globals__", None)
        if _Launch.scope is not None and isinstance(names, dict) and id(names) not in _Launch.done:
            _Launch.done.add(id(names))
            _rebind_globals(fn, names, _Launch.scope)
        return result

    return patch_lang


def _call_grid(original):
    @functools.wraps(original)
    def call_grid(self, *args, **kwargs):
        if _Launch.scope is not None:  # a launch from inside a launch: the outer one's patches hold
            return original(self, *args, **kwargs)
        _Launch.scope, _Launch.done = _STATE["interpreter"]._LangPatchScope(), set()
        try:
            return original(self, *args, **kwargs)
        finally:
            scope, _Launch.scope = _Launch.scope, None
            scope.restore()

    return call_grid


def install() -> bool:
    """Read each interpreted launch's globals as the code generator does; idempotent. False (nothing
    changed) for a Triton whose interpreter or backend is laid out otherwise."""
    if installed():
        return True
    try:
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend
        from triton.runtime import interpreter
    except ImportError:
        return False
    executor = getattr(interpreter, "GridExecutor", None)
    wanted = ("_patch_lang", "_patch_attr", "_patch_builtin", "_LangPatchScope", "interpreter_builder")
    if executor is None or not all(hasattr(interpreter, name) for name in wanted):
        return False
    try:
        module_map = make_backend(GPUTarget(*frontend.TARGET)).get_module_map()
    except Exception:  # noqa: BLE001 (a backend that cannot say: nothing to map)
        return False
    _STATE.update(module_map=dict(module_map), interpreter=interpreter, language=tl)
    _install_mapped_modules(interpreter, tl.core.is_builtin)
    patch_lang, call_grid = _patch_lang(interpreter._patch_lang), _call_grid(executor.__call__)
    setattr(patch_lang, _PATCHED, True)
    setattr(call_grid, _PATCHED, True)
    interpreter._patch_lang = patch_lang
    executor.__call__ = call_grid
    return True


def installed() -> bool:
    interpreter = sys.modules.get("triton.runtime.interpreter")
    return bool(getattr(getattr(interpreter, "_patch_lang", None), _PATCHED, False))
