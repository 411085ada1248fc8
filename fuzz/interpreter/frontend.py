"""Triton's compiler front end in the interpreter: a kernel a GPU refuses to compile is refused here too.

Triton's interpreter runs a kernel's Python body on numpy arrays; nothing compiles it, so nothing
checks what Triton's code generator checks while it turns the kernel into TTIR: that a variable
carried through a loop keeps its type (``acc = tl.zeros([B], tl.float16)`` then ``acc = acc +
x.to(tl.float32)`` in the loop: "Loop-carried variable acc has initial type fp16 but is
re-assigned to fp32"), that both branches of an ``if`` give a variable one type, that a
``tl.constexpr`` is known at compile time, the code generator's rules on shapes, types and calls.
On a GPU such a kernel raises ``CompilationError`` at its first launch (a ``CompileError``
mutant, an ``error`` verdict); in the interpreter it ran and could pass. Found by running the same
mutants on both: six float16-accumulator mutants of three corpus kernels were ``CompileError`` on an
H200 and ``Survived`` on the CPU.

:func:`install` wraps the interpreter's launch (``InterpretedFunction.run``, which
``kernel[grid](...)``, autotuners and heuristics all call). Before a launch runs, Triton's own
binder specializes its arguments as a GPU launch does (pointer element types, integers by range
and the constant 1, constexpr values, the launch options), and on each new specialization Triton's
front end, ``ASTSource.make_ir``, runs for an sm_90 target (an H200): the code generator only, no
MLIR pass, no ptxas, no driver. A ``CompilationError`` from it is raised from the launch, as a
GPU's launch raises it. Divisibility by 16 and pointer alignment stay out of the cache key: they
only annotate arguments (``tt.divisibility``), and the code generator checks nothing on them. A
refused specialization raises again on its next launch, without running the front end again.

The front end needs Triton's language as a compile sees it, and the interpreter changes it: the
library's ``@jit`` functions (``tl.max``, ``tl.zeros``) are interpreted functions when Triton is
imported with the interpreter on, and a launch that calls a ``@jit`` helper leaves ``tl.core``'s
builtins patched with numpy versions (``InterpretedFunction.__call__`` never undoes its patch).
So while the front end runs, the library functions (and the kernel's own helpers) are JITFunctions,
each patched attribute is Triton's own again (the builtin a wrapper holds, the value
:func:`install` recorded, or ``triton.language``'s copy of a ``tl.core`` name, which a launch does
restore), ``knobs.runtime.interpret`` is off; afterwards all is as it was.

No false alarms: anything else that goes wrong (a Triton whose internals differ, a binder that
refuses an argument the interpreter accepts, a patched attribute whose own value is nowhere to be
found, an MLIR verifier failure, a ``CompilationError`` that passed through the interpreter's
code or ours) skips the check for that specialization, with a debug line on this module's
logger, and the kernel runs in the interpreter as before. The front end is the installed Triton's
(3.9 pinned; 3.6 on a GPU host): where two releases' code generators disagree, the CPU follows it.

Cost: one front-end run per new specialization, 0.04 to 0.2 s for an LSE kernel (:func:`stats`);
a launch of a known one costs Triton's binder and a dictionary lookup.

Light on purpose, like :mod:`fuzz.interpreter.autotune` and :mod:`fuzz.interpreter.bfloat16`: the standard
library and Triton only, because it runs in the isolated worker. On a GPU the interpreter is never
called and nothing changes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import logging
import sys
import time
import types

__all__ = ["TARGET", "check_launch", "install", "installed", "stats"]

TARGET = ("cuda", 90, 32)
"""The GPU target the front end runs for: backend, compute capability (an H200's sm_90), warp size."""

_PATCHED = "_lse_fuzz_front_end"  # marks InterpretedFunction once install() has wrapped its run
_LOG = logging.getLogger(__name__)
_SKIP = object()  # a cache entry: the check could not run for this specialization
_DELETE = object()  # an attribute the language does not have
_PATCH_LAMBDA = "_patch_attr.<locals>.<lambda>"  # the interpreter's wrapper of a builtin
_EMULATION_SIGNS = ("InterpretedFunction", "InterpreterError", "triton.runtime.interpreter", "_patch_attr",
                    "TensorHandle", "interpreter_builder")
# Set by install(), not at import: importing Triton before the interpreter is chosen would build
# its library functions for the wrong mode (reference._device).
_triton = types.SimpleNamespace()
_state: dict = {"backend": None, "target": None, "pristine": {}, "front_end_function": None}
_counts: dict = {"runs": 0, "seconds": 0.0, "rejected": 0, "skipped": 0}
_twins: dict[int, tuple[object, _Twin]] = {}  # id(interpreted function) -> (it, its twin)


def stats() -> dict:
    """In this process: front-end ``runs`` (one per new specialization), their ``seconds``, how many
    ``rejected`` a kernel (a CompilationError) and how many were ``skipped`` (the check could not run)."""
    return dict(_counts)


def _backend():
    """Triton's CUDA backend for :data:`TARGET`, made once (it needs no GPU and no driver)."""
    if _state["backend"] is None:
        target = _triton.GPUTarget(*TARGET)
        _state["backend"], _state["target"] = _triton.make_backend(target), target
    return _state["backend"], _state["target"]


class _Twin:
    """The JITFunction of an interpreted function, and what its launches found (per cache key:
    None, it compiles; a CompilationError; or _SKIP)."""

    def __init__(self, interpreted) -> None:
        self.jit = _state["front_end_function"](interpreted.fn, **interpreted.kwargs)
        self.results: dict = {}

    @functools.cached_property
    def binder(self):
        """Triton's argument binder and specializer (a helper called from a kernel never needs one)."""
        return _triton.create_function_from_signature(self.jit.signature, self.jit.params, _backend()[0])


def _front_end_function(jit_function: type) -> type:
    """A JITFunction whose globals show interpreted functions as JITFunctions too, so that the code
    generator compiles a helper the kernel calls instead of calling it as Python."""

    class FrontEndFunction(jit_function):
        def get_capture_scope(self):
            return {name: _twin_value(value) for name, value in super().get_capture_scope().items()}

        @property
        def cache_key(self) -> str:
            # Triton's walks the raw globals, where helpers are interpreted functions ("Unsupported
            # function referenced"); the code generator only needs a hash of the function (a dict key).
            return hashlib.sha256(f"{self._fn_name}:{self.starting_line_number}:{self.src}".encode()).hexdigest()

    return FrontEndFunction


def _twin_of(interpreted) -> _Twin:
    entry = _twins.get(id(interpreted))
    if entry is None or entry[0] is not interpreted:
        entry = (interpreted, _Twin(interpreted))
        _twins[id(interpreted)] = entry
    return entry[1]


def _twin_value(value):
    """An interpreted function -> its JITFunction; the interpreter's wrapper of a builtin (a module's
    ``to_dtype = tl.cast`` run while a launch had the language patched) -> the builtin; a module
    of the candidate's that holds interpreted functions -> a copy holding their JITFunctions
    (``helpers.combine(...)``); anything else unchanged."""
    if isinstance(value, _triton.InterpretedFunction):
        return _twin_of(value).jit
    if getattr(value, "__qualname__", "") == _PATCH_LAMBDA:
        return _builtin_of(value)
    if type(value) is types.ModuleType and not value.__name__.startswith(("triton", "torch", "numpy")):
        members = vars(value)
        if any(isinstance(member, _triton.InterpretedFunction) for member in members.values()):
            copy = types.ModuleType(value.__name__, getattr(value, "__doc__", None))
            copy.__dict__.update({name: _twin_value(member) if isinstance(member, _triton.InterpretedFunction)
                                  else member for name, member in members.items()})
            return copy
    return value


def _cache_key(specialization: list, options: dict) -> str:
    """Triton's kernel-cache key without divisibility and alignment ("D"), which only annotate."""
    plain = [(kind, None) if kind != "constexpr" and isinstance(value, str) and value in ("D", "") else (kind, value)
             for kind, value in specialization]
    return _triton.compute_cache_key({}, plain, options)


def _launch_options(twin: _Twin, kwargs: dict) -> dict:
    """The keyword options a GPU launch adds before binding (``JITFunction.run``, Triton 3.6 to 3.9)."""
    knobs = _triton.knobs
    options = dict(kwargs)
    options["debug"] = options.get("debug", twin.jit.debug) or knobs.runtime.debug
    options["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    # Triton 3.9's float sanitizer knob; 3.6 (a GPU host's) has none, and its launch passes none.
    if hasattr(knobs.compilation, "fpsan_homomorphic_casts"):
        options["fpsan_homomorphic_casts"] = knobs.compilation.fpsan_homomorphic_casts
    # Fusion is a later stage's option; naming it keeps Triton 3.9's "the default will change"
    # warning (printed on the first compile) out of the candidate's output.
    options.setdefault("enable_fp_fusion", True)
    return options


def _from_emulation(error: BaseException) -> bool:
    """Whether a front-end error passed through the interpreter or our adaptations of it (an
    interpreted function called as Python, an interpreter object in a type rule): not the kernel's.
    Only the frames below this module's own (the front end's call into Triton) count: the wrappers
    a launch passed through on its way here (the fuzzer's counting of launches) are not the error's."""
    here = __file__.replace("\\", "/")
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if any(sign in f"{type(error).__name__}: {error}" for sign in _EMULATION_SIGNS):
            return True
        paths = []
        frame = error.__traceback__
        while frame is not None:
            paths.append(frame.tb_frame.f_code.co_filename.replace("\\", "/"))
            frame = frame.tb_next
        below = paths[len(paths) - paths[::-1].index(here):] if here in paths else paths
        if any(path.endswith("triton/runtime/interpreter.py") or (
                path != here and path.rpartition("/")[0] == here.rpartition("/")[0]) for path in below):  # fuzz's
            return True
        error = error.__cause__ or error.__context__  # the code generator raises "from None": its context
    return False


class _Unknown(Exception):
    """Triton's language is patched by the interpreter and its own value was not recorded."""


def _made_by_interpreter(value, name: str) -> bool:
    """Whether ``name = value`` in the language is a replacement the interpreter (or a module of
    ours that adapts it) put there: a function of theirs under another name (``range =
    _new_range``, a builtin's wrapper), ``print`` as ``static_print``. The interpreter's own names
    that its rewriting of a kernel imports into a module (``TensorHandle``) are no replacement."""
    if value is print:
        return name != "print"
    inner = getattr(value, "func", None) or getattr(value, "fget", None) or value  # a partial, a property
    module = str(getattr(inner, "__module__", None) or "")
    if not module.startswith(("triton.runtime.interpreter", "fuzz.")):
        return False
    return (callable(value) or isinstance(value, property)) and getattr(value, "__name__", None) != name


def _language_owners() -> list:
    """Triton's language modules and the classes they define: where the interpreter patches."""
    modules = [module for name, module in list(sys.modules.items())
               if name.startswith("triton.language") and isinstance(module, types.ModuleType)]
    classes = {id(value): value for module in modules for value in vars(module).values()
               if isinstance(value, type) and str(getattr(value, "__module__", "")).startswith("triton.language")}
    return [*modules, *classes.values()]


def _builtin_of(wrapper):
    """The builtin the interpreter's wrapper (``_patch_attr``'s lambda, maybe wrapped again) calls;
    the wrapper itself where it holds none."""
    inner = wrapper
    while getattr(inner, "__qualname__", "") == _PATCH_LAMBDA:
        inner = (inner.__kwdefaults__ or {}).get("member")
    return wrapper if inner is None else inner


def _pristine(owner, name: str, now):
    """Triton's own value of ``owner.name`` (``_DELETE`` where it has none); _Unknown if not known.

    From the patch itself (a builtin's wrapper holds it), else as :func:`install` recorded it, else
    from ``triton.language``'s copy of a ``triton.language.core`` name: a launch's own patch of
    ``tl`` is undone when it ends, the leak is in ``tl.core`` (reached through the library's helpers).
    """
    if getattr(now, "__qualname__", "") == _PATCH_LAMBDA:  # a builtin, wrapped (maybe more than once)
        builtin = _builtin_of(now)
        if builtin is not now:
            return builtin
    entry = _state["pristine"].get(id(owner))
    if entry is not None and entry[0] is owner:
        before = entry[1].get(name, _DELETE)
        if before is _DELETE or not _made_by_interpreter(before, name):
            return before
    language = sys.modules.get("triton.language")
    if owner is sys.modules.get("triton.language.core") and language is not None:
        shared = vars(language).get(name, _DELETE)
        if shared is not _DELETE and not _made_by_interpreter(shared, name):
            return shared
    raise _Unknown(f"{getattr(owner, '__name__', owner)}.{name}")


def _language_swaps() -> list[tuple[object, str, object]]:
    """(owner, name, what the front end must see there): Triton's own values where the interpreter
    patched the language, JITFunctions for its library's interpreted functions (``x.max()`` reaches
    one through a member of ``tl.tensor`` that calls it)."""
    tensor, interpreted_function = _triton.tensor, _triton.InterpretedFunction
    swaps = []
    for owner in _language_owners():
        for name, value in list(vars(owner).items()):
            if isinstance(value, interpreted_function):
                swaps.append((owner, name, _twin_of(value).jit))
            elif _made_by_interpreter(value, name):
                swaps.append((owner, name, _pristine(owner, name, value)))
            elif owner is tensor and callable(value) and getattr(value, "__closure__", None):
                called = [cell.cell_contents for cell in value.__closure__
                          if isinstance(cell.cell_contents, interpreted_function)]
                if len(called) == 1 and called[0].fn.__name__ == name:  # _tensor_member_fn's wrapper
                    swaps.append((owner, name, _twin_of(called[0]).jit))
    return swaps


def _set(owner, name: str, value) -> None:
    if value is _DELETE:
        delattr(owner, name)
    else:
        setattr(owner, name, value)


@contextlib.contextmanager
def _compiled_language():
    """Triton's language as a GPU compile sees it, while the front end runs (then as it was), and
    the code generator's printing (``tl.static_print``, a module that fails to verify) kept out
    of the candidate's output."""
    swaps = _language_swaps()
    undo = []
    try:
        with _triton.knobs.runtime.scope(), contextlib.redirect_stdout(io.StringIO()):
            _triton.knobs.runtime.interpret = False  # a constexpr function returns a constexpr
            for owner, name, value in swaps:
                undo.append((owner, name, vars(owner).get(name, _DELETE)))
                _set(owner, name, value)
            yield
    finally:
        for owner, name, value in reversed(undo):
            _set(owner, name, value)


def _front_end(twin: _Twin, bound_args, specialization, options: dict):
    """None when the kernel compiles to TTIR, the CompilationError when it does not, else _SKIP."""
    started = time.perf_counter()
    result = _run_front_end(twin, bound_args, specialization, options)
    _counts["runs"] += 1
    _counts["seconds"] += time.perf_counter() - started
    if result is not None:
        _counts["skipped" if result is _SKIP else "rejected"] += 1
    return result


def _run_front_end(twin: _Twin, bound_args, specialization, options: dict):
    backend, target = _backend()
    try:
        parsed, signature, constexprs, attrs = twin.jit._pack_args(backend, options, bound_args, specialization,
                                                                   options)
        constexprs = {path: _twin_value(value) for path, value in constexprs.items()}
        source = _triton.ASTSource(twin.jit, signature, constexprs, attrs)
        context = _triton.ir.context()
        _triton.ir.load_dialects(context)
        backend.load_dialects(context)
        with _compiled_language():
            source.make_ir(target, parsed, backend.get_codegen_implementation(parsed), backend.get_module_map(),
                           context)
    except _triton.CompilationError as error:
        if _from_emulation(error):
            _LOG.debug("front end of %s skipped: the error came through the interpreter: %s", twin.jit, error)
            return _SKIP
        return _innermost(error)
    except Exception as error:  # noqa: BLE001 (any other failure is ours or Triton's, never a verdict)
        _LOG.debug("front end of %s skipped: %s: %s", twin.jit, type(error).__name__, error)
        return _SKIP
    return None


def _innermost(error):
    """The CompilationError nearest the fault. A call to a helper that fails to compile is wrapped in
    one at the call site, with no message of its own and the helper's as its cause: a report that
    names the call site alone would not say what failed (a misspelt ``tl.`` function, say)."""
    while isinstance(error.__cause__, _triton.CompilationError):
        error = error.__cause__
    return error


def check_launch(interpreted, args: tuple, kwargs: dict) -> None:
    """Raise the CompilationError a GPU's launch of ``interpreted`` with these arguments raises;
    nothing when it compiles, or when the check cannot run. :func:`install` calls it on every launch."""
    try:
        twin = _twin_of(interpreted)
        options = _launch_options(twin, kwargs)
        bound_args, specialization, binder_options = twin.binder(*args, **options)
        key = _cache_key(specialization, binder_options)
    except Exception as error:  # noqa: BLE001 (the interpreter decides what this launch does)
        _LOG.debug("front end of %s skipped: binding failed: %s: %s", interpreted, type(error).__name__, error)
        return
    if key not in twin.results:
        twin.results[key] = _front_end(twin, bound_args, specialization, options)
    result = twin.results[key]
    if result is not None and result is not _SKIP:
        raise result.with_traceback(None)


def _bind_triton() -> bool:
    """Import the Triton names used here; False for a Triton that lacks one."""
    try:
        from triton import knobs
        from triton._C.libtriton import ir
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.compiler.compiler import make_backend
        from triton.compiler.errors import CompilationError
        from triton.language.core import tensor
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction, compute_cache_key, create_function_from_signature
    except ImportError:
        return False
    if not hasattr(JITFunction, "_pack_args") or "run" not in vars(InterpretedFunction):
        return False
    _triton.__dict__.update(knobs=knobs, ir=ir, GPUTarget=GPUTarget, ASTSource=ASTSource, make_backend=make_backend,
                            CompilationError=CompilationError, tensor=tensor, InterpretedFunction=InterpretedFunction,
                            compute_cache_key=compute_cache_key,
                            create_function_from_signature=create_function_from_signature)
    _state["front_end_function"] = _front_end_function(JITFunction)
    return True


def install() -> bool:
    """Run the front end before every interpreted launch; idempotent. False (nothing changed) for
    a Triton without the interpreter or the compiler parts used here.

    Best before any kernel is launched in the interpreter: it records Triton's language as it is
    then (what a launch leaves patched can mostly be undone without the record, see _pristine).
    """
    if installed():
        return True
    if not _bind_triton():
        return False
    interpreted_function = _triton.InterpretedFunction
    original = interpreted_function.run

    @functools.wraps(original)
    def run(self, *args, grid, warmup, **kwargs):
        if not warmup:
            check_launch(self, args, kwargs)
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    _state["pristine"] = {id(owner): (owner, dict(vars(owner))) for owner in _language_owners()}
    interpreted_function.run = run
    setattr(interpreted_function, _PATCHED, True)
    return True


def installed() -> bool:
    interpreter = sys.modules.get("triton.runtime.interpreter")
    return bool(getattr(getattr(interpreter, "InterpretedFunction", None), _PATCHED, False))
